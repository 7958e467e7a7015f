package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// openSSE opens a legacy SSE session on srv and returns the URL its
// messages go to, and the func that disconnects it.
func openSSE(t *testing.T, srv *httptest.Server) (message string, disconnect func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			message = data
			break
		}
	}
	if message == "" {
		t.Fatalf("the SSE stream named no message endpoint: %v", sc.Err())
	}
	if !strings.HasPrefix(message, "http") {
		message = srv.URL + message
	}
	return message, func() {
		cancel()
		resp.Body.Close()
	}
}

func postInitialize(t *testing.T, message string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, err := http.Post(message, "application/json", strings.NewReader(body))
	if err == nil {
		resp.Body.Close()
	}
}

func logSessions(p *passthru) (sessions, initializing, ended int) {
	p.logs.mu.Lock()
	defer p.logs.mu.Unlock()
	return len(p.logs.sessions), len(p.logs.initializing), len(p.logs.ended)
}

// TestSSEDisconnectDuringInitializeLeavesNoLogRoute: a legacy SSE client
// that disconnects while its initialize is being served is unregistered
// before the initialize ends; the session must not then be added to the
// sessions backend logs go to (one stale entry per such client, forever).
// A client that stays is added, and removed when it leaves.
func TestSSEDisconnectDuringInitializeLeavesNoLogRoute(t *testing.T) {
	s, _ := newPassthroughServer(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var hold atomic.Bool
	hold.Store(true)
	s.hooks.AddBeforeInitialize(func(context.Context, any, *mcp.InitializeRequest) {
		if hold.Load() {
			entered <- struct{}{}
			<-release
		}
	})
	gone, initialized := make(chan struct{}, 4), make(chan struct{}, 4)
	s.hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { gone <- struct{}{} })
	s.hooks.AddAfterInitialize(func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) {
		initialized <- struct{}{}
	})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	message, disconnect := openSSE(t, srv)
	go postInitialize(t, message)
	<-entered
	disconnect()
	<-gone
	close(release)
	<-initialized
	if n, i, e := logSessions(s.pass); n != 0 || i != 0 || e != 0 {
		t.Errorf("after a client left in the middle of initialize: %d log routes, %d initializing, %d ended; want none", n, i, e)
	}

	hold.Store(false)
	message, disconnect = openSSE(t, srv)
	postInitialize(t, message)
	<-initialized
	if n, _, _ := logSessions(s.pass); n != 1 {
		t.Errorf("an initialized client that stays: %d log routes, want 1", n)
	}
	disconnect()
	<-gone
	if n, i, e := logSessions(s.pass); n != 0 || i != 0 || e != 0 {
		t.Errorf("after it left: %d log routes, %d initializing, %d ended; want none", n, i, e)
	}
}
