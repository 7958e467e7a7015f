package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/dispatch"
)

// observe passes what backends report during the request's calls back to
// the client that made it: progress under the client's own token (the
// backend saw a token of kiln's), and backend log messages.
func (s *Server) observe(ctx context.Context, req mcp.CallToolRequest) context.Context {
	return s.observeWith(ctx, req, s.newCallClient(ctx, nil))
}

// observeWith is observe with the session that answers the backends'
// requests to the client during the call.
func (s *Server) observeWith(ctx context.Context, req mcp.CallToolRequest, client *callClient) context.Context {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	send := func(method string, params map[string]any) {
		if err := s.mcp.SendNotificationToClient(ctx, method, params); err != nil {
			s.log.Debug("could not forward a backend notification", "method", method, "err", err)
		}
	}
	obs := &dispatch.Observer{
		Client: client,
		Log: func(raw json.RawMessage) {
			var params map[string]any
			if json.Unmarshal(s.opts.Scrubber.JSON(raw), &params) == nil {
				send("notifications/message", params)
			}
		},
	}
	if token != nil {
		obs.Progress = func(progress float64, total *float64, message string) {
			p := map[string]any{"progressToken": token, "progress": progress}
			if total != nil {
				p["total"] = *total
			}
			if message != "" {
				p["message"] = s.opts.Scrubber.String(message)
			}
			send("notifications/progress", p)
		}
	}
	return dispatch.WithObserver(ctx, obs)
}
