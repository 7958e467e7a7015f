package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWithNotFoundURI(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"adds the uri", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"handler not found for resource URI 'kiln://nope': resource not found"}}`,
			`{"error":{"code":-32602,"data":{"uri":"kiln://nope"},"message":"handler not found for resource URI 'kiln://nope': resource not found"},"id":3,"jsonrpc":"2.0"}`},
		{"keeps existing data", `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"handler not found for resource URI 'x': resource not found","data":{"uri":"x"}}}`, ""},
		{"other errors untouched", `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found"}}`, ""},
		{"results untouched", `{"jsonrpc":"2.0","id":3,"result":{"text":"handler not found for resource URI 'a': resource not found"}}`, ""},
		{"not JSON", `handler not found for resource URI`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if got := string(withNotFoundURI([]byte(tc.in))); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestLineWriterPatchesSplitWrites(t *testing.T) {
	var out bytes.Buffer
	lw := &lineWriter{w: &out, patch: bytes.ToUpper}
	for _, part := range []string{"ab", "c\nde", "f\n", "g"} {
		if _, err := lw.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "ABC\nDEF\n" {
		t.Errorf("got %q", out.String())
	}
}

func TestNotFoundHTTP(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"handler not found for resource URI 'kiln://x': resource not found"}}`
	for _, ct := range []string{"application/json", "text/event-stream"} {
		t.Run(ct, func(t *testing.T) {
			h := notFoundHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Header().Set("Content-Length", "999")
				w.WriteHeader(http.StatusOK)
				if ct == "text/event-stream" {
					w.Write([]byte("event: message\ndata: " + msg[:40]))
					w.Write([]byte(msg[40:] + "\n\n"))
					return
				}
				w.Write([]byte(msg + "\n"))
			}), withNotFoundURI)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}")))
			if !strings.Contains(rec.Body.String(), `"data":{"uri":"kiln://x"}`) || rec.Code != http.StatusOK {
				t.Errorf("%d %s", rec.Code, rec.Body.String())
			}
			if rec.Header().Get("Content-Length") == "999" {
				t.Error("a stale Content-Length survived the patch")
			}
		})
	}
}

func TestListenAckComesFirst(t *testing.T) {
	const ack = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{}}}`
	result := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`
	for _, tc := range []struct {
		name   string
		frames []string
		want   []string // data payloads in order
	}{
		{"result raced ahead of the ack", []string{result}, []string{ack, result}},
		{"ack already first", []string{ack, result}, []string{ack, result}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := notFoundHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, f := range tc.frames {
					w.Write([]byte("event: message\ndata: " + f + "\n\n"))
				}
			}), withNotFoundURI)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{}}`)))
			var got []string
			for _, line := range strings.Split(rec.Body.String(), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					got = append(got, d)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("frames:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
