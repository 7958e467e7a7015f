package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestWithDefaults(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name":  map[string]any{"type": "string", "default": "Ada"},
		"age":   map[string]any{"type": "integer", "default": 36},
		"email": map[string]any{"type": "string"},
	}}
	tests := []struct {
		name          string
		content, want any
	}{
		{"empty answer gets every default", map[string]any{}, map[string]any{"name": "Ada", "age": float64(36)}},
		{"nil answer gets every default", nil, map[string]any{"name": "Ada", "age": float64(36)}},
		{"given values win", map[string]any{"name": "Grace", "email": "g@x"}, map[string]any{"name": "Grace", "age": float64(36), "email": "g@x"}},
		{"non-object answer untouched", "yes", "yes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withDefaults(schema, tc.content)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefusedOwnVersion(t *testing.T) {
	errResp := func(data any) *transport.JSONRPCResponse {
		return &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Data: data}}
	}
	tests := []struct {
		name string
		resp *transport.JSONRPCResponse
		err  error
		want bool
	}{
		{"own version listed", errResp(map[string]any{"supported": []string{"2026-07-28"}, "requested": "2026-07-28"}), nil, true},
		{"other version listed", errResp(map[string]any{"supported": []string{"2025-11-25"}, "requested": "2026-07-28"}), nil, false},
		{"typed error, own version", nil, mcp.UnsupportedProtocolVersionError{Version: "2026-07-28", Supported: []string{"2026-07-28"}}, true},
		{"other error", &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: -32600}}, nil, false},
		{"success", &transport.JSONRPCResponse{}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedOwnVersion(tc.resp, tc.err); got != tc.want {
				t.Errorf("refusedOwnVersion = %v, want %v", got, tc.want)
			}
		})
	}
}
