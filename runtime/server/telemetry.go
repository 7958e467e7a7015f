package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// sessionHooks adds to h what tells Options.Telemetry when sessions open
// and close. The SDK keeps one Hooks per server (a second WithHooks
// replaces the first), so every hook goes into the same h.
func (s *Server) sessionHooks(h *server.Hooks) {
	if t := s.opts.Telemetry; t != nil {
		h.AddOnRegisterSession(func(context.Context, server.ClientSession) { t.Sessions(1) })
		h.AddOnUnregisterSession(func(context.Context, server.ClientSession) { t.Sessions(-1) })
	}
}

// metaString reads a string field of a request's _meta (W3C trace context
// travels there over MCP).
func metaString(req mcp.CallToolRequest, key string) string {
	if req.Params.Meta == nil {
		return ""
	}
	v, _ := req.Params.Meta.AdditionalFields[key].(string)
	return v
}
