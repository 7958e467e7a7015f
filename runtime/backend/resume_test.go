package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
)

// resumeServer is the go-sdk's streamable HTTP server with an event store,
// whose tool "work" is answered over a stream that ends before the result:
// cut resets the connection after the first event (a network fault, made by
// a wrapper since no real server breaks its own connection), otherwise the
// tool closes the stream itself with a retry hint (SEP-1699). It counts the
// tools/call POSTs and the GETs that resume with Last-Event-ID.
type resumeServer struct {
	url            string
	calls, resumes atomic.Int64
}

func startResumeServer(t *testing.T, cut bool) *resumeServer {
	t.Helper()
	rs := &resumeServer{}
	s := sdk.NewServer(&sdk.Implementation{Name: "resume", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "work", Description: "answers after its stream ended"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			if !cut && req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "worked"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			rs.resumes.Add(1)
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				rs.calls.Add(1)
				if cut {
					w = &resetAfterFlush{ResponseWriter: w}
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rs.url = srv.URL
	return rs
}

// resetAfterFlush flushes the first event to the client, then resets the
// connection; later writes fail as on a dead socket.
type resetAfterFlush struct {
	http.ResponseWriter
	mu  sync.Mutex
	cut bool
}

func (c *resetAfterFlush) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return 0, net.ErrClosed
	}
	return c.ResponseWriter.Write(p)
}

func (c *resetAfterFlush) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return net.ErrClosed
	}
	rc := http.NewResponseController(c.ResponseWriter)
	if err := rc.Flush(); err != nil {
		return err
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return err
	}
	_ = conn.(*net.TCPConn).SetLinger(0)
	c.cut = true
	return conn.Close()
}

// TestResumeStream: a call whose response stream is reset mid-call, or
// closed by the server with a retry hint, completes through a GET with
// Last-Event-ID, and is sent once.
func TestResumeStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  bool
	}{{"connection reset", true}, {"server closes with retry hint", false}} {
		t.Run(tc.name, func(t *testing.T) {
			rs := startResumeServer(t, tc.cut)
			c := dial(t, &config.Backend{Name: "resume", Transport: config.TransportHTTP, URL: rs.url, Enabled: true})
			if c.ProtocolVersion() >= statelessProtocol {
				t.Fatalf("protocol %s: resumable streams need a 2025-11-25 session", c.ProtocolVersion())
			}
			r, err := c.CallTool(t.Context(), "work", nil, CallOptions{})
			if err != nil || r.IsError || r.TextContent() != "worked" {
				t.Fatalf("work: err=%v result=%+v", err, r)
			}
			if n := rs.calls.Load(); n != 1 {
				t.Errorf("the call was sent %d times; want once", n)
			}
			if rs.resumes.Load() == 0 {
				t.Error("no GET with Last-Event-ID reached the server")
			}
		})
	}
}

// TestResumeNotModern: a 2026-07-28 request's stream is handed over as the
// server sent it (that revision has no resumable streams), and so is a
// stream without event IDs.
func TestResumeNotModern(t *testing.T) {
	var gets atomic.Int64
	// A hand-written SSE endpoint: the cases need a stream that ends
	// before its response, which no server here sends on 2026-07-28.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("X-Case") == "ids" {
			io.WriteString(w, "id: 1\nretry: 10\ndata: \n\n")
		} else {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ name, version, kase string }{
		{"2026-07-28 with ids", statelessProtocol, "ids"},
		{"no ids", legacyProtocol, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
			req.Header.Set("Mcp-Protocol-Version", tc.version)
			req.Header.Set("X-Case", tc.kase)
			resp, err := newResumer(nil).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("read: %v", err)
			}
			if n := gets.Swap(0); n != 0 {
				t.Errorf("%d resumption GETs; want none", n)
			}
		})
	}
}

// TestIsResponseTo: only the response with the request's id ends a POST's
// stream; a server request reusing the id, or a notification, does not.
func TestIsResponseTo(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  any
		ok    bool
	}{
		{"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", float64(7), true},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-1,\"message\":\"x\"}}\n\n", "a", true},
		{"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{}}\n\n", float64(7), true},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n", float64(7), false},
		{"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", float64(7), false},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n", float64(7), false},
		{"data: {\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"result\":{}}\n\n", float64(7), false},
	} {
		if got := isResponseTo([]byte(tc.event), tc.want); got != tc.ok {
			raw, _ := json.Marshal(tc.event)
			t.Errorf("isResponseTo(%s, %v) = %v; want %v", raw, tc.want, got, tc.ok)
		}
	}
}
