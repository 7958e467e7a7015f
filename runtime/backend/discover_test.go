package backend

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestCheckDiscover: only a server/discover result that lists a stateless
// version kiln speaks keeps the connection on 2026-07-28; an empty result
// (what the conformance suite's 2025-11-25 servers answer to any unknown
// method) or legacy-only versions become the error that sends the SDK to
// the initialize handshake.
func TestCheckDiscover(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		modern       bool
	}{
		{"modern", `{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{}}`, true},
		{"empty result", `{}`, false},
		{"legacy versions only", `{"supportedVersions":["2025-11-25","2025-06-18"]}`, false},
		{"unknown versions only", `{"supportedVersions":["2099-01-01"]}`, false},
		{"not an object", `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Result: json.RawMessage(tc.result)}
			got := checkDiscover(in)
			if tc.modern {
				if got != in {
					t.Fatalf("checkDiscover changed a modern result: %+v", got)
				}
				return
			}
			if got.Error == nil || got.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION || got.ID != in.ID {
				t.Fatalf("checkDiscover(%s) = %+v; want an unsupported-version error for the same id", tc.result, got)
			}
			if refusedOwnVersion(got, nil) {
				t.Errorf("the rewritten answer must not trigger the same-version retry")
			}
		})
	}
	if errResp := (&transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND}}); checkDiscover(errResp) != errResp {
		t.Errorf("checkDiscover changed an error answer")
	}
}
