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

// BenchmarkCheckEnvelope measures what the envelope check adds to every
// message on stdio and HTTP.
func BenchmarkCheckEnvelope(b *testing.B) {
	for _, tc := range []struct{ name, msg string }{
		{"tools/call", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"call_tool_chain","arguments":{"code":"{\"tool\":\"everything.echo\",\"arguments\":{\"message\":\"hi\"}}"}}}`},
		{"64KiB arguments", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"call_tool_chain","arguments":{"code":"` + strings.Repeat("x", 64<<10) + `"}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			msg := []byte(tc.msg)
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if checkEnvelope(msg) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}

// FuzzEnvelopeFastPath checks the one-pass fast path never lets through a
// message the decoding check would refuse.
func FuzzEnvelopeFastPath(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"ID":true,"method":"x"}`,
		`{"i\u0064":{},"method":"x"}`,
		`{"params":{"id":{}},"id":"a"}`,
		`{"a":"\"id\":{}","id":2}`,
		`[{"jsonrpc":"2.0","id":1}]`,
		`{"jsonrpc":2}`,
		` {"method" : 5 }`,
		strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if plainRequest(b) {
			if e := envelopeProblem(b); e != nil {
				t.Errorf("fast path passed %q, which the decoding check refuses: %s", b, e.msg)
			}
		}
	})
}

// requestID finds what the decoder finds, by its own scan where it can and
// by the decoder in the odd cases.
func TestRequestIDMatchesTheDecoder(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"id":"inner"}}}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call"}`,
		`{ "id" : -1.5e3 , "method":"tools/call"}`,
		`{"method":"tools/call","id":"late"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		`{"id":null,"method":"tools/call"}`,
		`{"ID":3,"method":"tools/call"}`,
		`{"id":1,"id":2,"method":"tools/call"}`,
		`{"\u0069d":4,"method":"tools/call"}`,
		`[{"id":1,"method":"tools/call"}]`,
	} {
		var want struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(body), &want)
		if got := requestID([]byte(body)); string(got) != string(want.ID) {
			t.Errorf("requestID(%s) = %s, want %s", body, got, want.ID)
		}
	}
}
