package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/dispatch"
)

// observe passes what backends report during the request's calls back to
// the client that made it: progress under the client's own token (the
// backend saw a token of kiln's), and backend log messages.
func (s *Server) observe(ctx context.Context, req mcp.CallToolRequest) context.Context {
	return s.observeWith(ctx, req, s.newCallClient(ctx, nil))
}

// observeWith is observe with the session that answers the backends'
// requests to the client during the call; nil answers none.
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
		Log: func(raw json.RawMessage) {
			var params map[string]any
			if json.Unmarshal(s.opts.Scrubber.JSON(raw), &params) == nil && s.logWanted(ctx, params["level"]) {
				send("notifications/message", params)
			}
		},
	}
	if client != nil {
		obs.Client = client
	}
	obs.LogLevel = s.logLevel(ctx)
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && info.LogLevel == "" {
		// logWanted passes this caller no message: asking the backend
		// for info would only make it send what kiln drops.
		obs.Quiet = true
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

// logLevel is the least severe level the client that made the call asked
// for, or "" when it named none.
func (s *Server) logLevel(ctx context.Context) string {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return string(info.LogLevel)
	}
	if s.pass == nil {
		return ""
	}
	return string(s.pass.logs.of(sessionID(ctx)))
}

// logWanted reports whether the client that made the call asked for a
// backend log message of level. Backends log at the most verbose level
// any client asked for: a 2026-07-28 request gets messages only at the
// level its _meta names, and none when it names none (SEP-2575); an older
// session gets them at the level it set, or all when it set none.
func (s *Server) logWanted(ctx context.Context, level any) bool {
	lv, _ := level.(string)
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != "" && mcp.LoggingLevel(lv).ShouldSendTo(info.LogLevel)
	}
	if s.pass == nil {
		return true
	}
	return s.pass.logs.admits(sessionID(ctx), mcp.LoggingLevel(lv))
}
