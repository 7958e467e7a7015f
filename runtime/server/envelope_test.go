package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEnvelopeOverHTTP checks the HTTP endpoints refuse what the SDK
// would misreport or serve, with a message saying what is wrong, and
// still serve a well-formed request.
func TestEnvelopeOverHTTP(t *testing.T) {
	srv := httptest.NewServer(newStdioTestServer(t, nil).Handler())
	t.Cleanup(srv.Close)
	tests := []struct {
		name, body string
		status     int
		code       int
		id         string
		msg        string
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]`, 400, -32600, "null", "batches are not supported (protocol 2025-06-18 and later removed them); send one request per message"},
		{"deep array", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), 400, -32700, "null", "nesting too deep (limit 512 levels)"},
		{"deep object in params", `{"jsonrpc":"2.0","id":"x","method":"initialize","params":` + strings.Repeat(`{"a":`, 513) + "0" + strings.Repeat("}", 514), 400, -32600, `"x"`, "nesting too deep (limit 512 levels)"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{}}`, 400, -32600, "null", "id must be a string or a number, got an object"},
		{"boolean id", `{"jsonrpc":"2.0","id":false,"method":"initialize","params":{}}`, 400, -32600, "null", "got a boolean"},
		{"method not a string", `{"jsonrpc":"2.0","id":3,"method":["initialize"]}`, 400, -32600, "3", "method must be a string, got an array"},
		{"well-formed", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, 200, 0, "1", ""},
	}
	for _, path := range []string{"/mcp", "/message?sessionId=none"} {
		for _, tc := range tests {
			if path != "/mcp" && tc.status == 200 {
				continue
			}
			t.Run(path+" "+tc.name, func(t *testing.T) {
				r, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+path, strings.NewReader(tc.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
				}
				var m struct {
					ID    json.RawMessage
					Error *struct {
						Code    int
						Message string
					}
				}
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("%v: %s", err, b)
				}
				if string(m.ID) != tc.id {
					t.Errorf("id %s, want %s", m.ID, tc.id)
				}
				switch {
				case tc.code == 0 && m.Error != nil:
					t.Errorf("error %+v", m.Error)
				case tc.code != 0 && (m.Error == nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, tc.msg)):
					t.Errorf("error %+v, want %d containing %q", m.Error, tc.code, tc.msg)
				}
			})
		}
	}
}
