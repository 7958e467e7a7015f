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
// cut breaks the connection after the first event with an ID (a network
// fault, made by a wrapper since no real server breaks its own
// connection), otherwise the tool closes the stream itself with a retry
// hint (SEP-1699). cutGET breaks the first GET stream the same way. It
// counts the tools/call POSTs and the GETs that resume with Last-Event-ID.
type resumeServer struct {
	url            string
	srv            *sdk.Server
	calls, resumes atomic.Int64
	listening, cut chan struct{} // a GET stream opened; a GET stream was cut
}

func startResumeServer(t *testing.T, cut, cutGET bool) *resumeServer {
	t.Helper()
	rs := &resumeServer{listening: make(chan struct{}, 8), cut: make(chan struct{}, 8)}
	s := sdk.NewServer(&sdk.Implementation{Name: "resume", Version: "1"}, nil)
	rs.srv = s
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
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "" {
			select {
			case rs.listening <- struct{}{}:
			default:
			}
			if cutGET {
				cutGET = false // one GET stream per session, opened once the session is up
				w, r = cutting(w, r, rs.cut)
			}
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				rs.calls.Add(1)
				if cut {
					w, r = cutting(w, r, nil)
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rs.url = srv.URL
	return rs
}

// resetAfterFlush passes the response on until a flush after an event
// with an ID, then closes the connection under the chunked body (the
// client reads an unexpected EOF, not an end); later writes fail as on a
// dead socket.
type resetAfterFlush struct {
	http.ResponseWriter
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	sent   []byte
	cut    bool
}

func (c *resetAfterFlush) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return 0, net.ErrClosed
	}
	c.sent = append(c.sent, p...)
	return c.ResponseWriter.Write(p)
}

func (c *resetAfterFlush) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return net.ErrClosed
	}
	rc := http.NewResponseController(c.ResponseWriter)
	if err := rc.Flush(); err != nil || !bytes.Contains(c.sent, []byte("\nid: ")) && !bytes.HasPrefix(c.sent, []byte("id: ")) {
		return err
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return err
	}
	c.cut = true
	// A server notices a dead connection and ends the request; after a
	// hijack net/http does not, so the wrapper does.
	c.cancel()
	if c.done != nil {
		c.done <- struct{}{}
	}
	return conn.Close()
}

// cutting wraps a request whose connection is to be broken.
func cutting(w http.ResponseWriter, r *http.Request, done chan struct{}) (http.ResponseWriter, *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	return &resetAfterFlush{ResponseWriter: w, done: done, cancel: cancel}, r.WithContext(ctx)
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
			rs := startResumeServer(t, tc.cut, false)
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

// TestResumeListenStream: a notification the server sends while kiln's GET
// stream is broken reaches kiln through the stream resumed with
// Last-Event-ID. The SDK alone reconnects without it a second later, which
// a server without an event store answers with new events only, and the
// go-sdk's with the whole stream again.
func TestResumeListenStream(t *testing.T) {
	rs := startResumeServer(t, false, true)
	notes := make(chan string, 16)
	cfg := &config.Backend{Name: "resume", Transport: config.TransportHTTP, URL: rs.url, Enabled: true}
	c, err := DialTimeout(t.Context(), cfg, 20*time.Second, Options{Listen: true, OnNotification: func(method string, _ json.RawMessage) {
		notes <- method
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	<-rs.listening
	noop := func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	}
	sdk.AddTool(rs.srv, &sdk.Tool{Name: "first"}, noop) // its list_changed goes out, then the stream breaks
	<-rs.cut
	if m := <-notes; m != "notifications/tools/list_changed" {
		t.Fatalf("first notification %q", m)
	}
	sdk.AddTool(rs.srv, &sdk.Tool{Name: "second"}, noop) // sent while the stream is down
	select {
	case m := <-notes:
		if m != "notifications/tools/list_changed" {
			t.Errorf("second notification %q", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the notification sent while the GET stream was down never arrived")
	}
	if rs.resumes.Load() == 0 {
		t.Error("no GET with Last-Event-ID reached the server")
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
