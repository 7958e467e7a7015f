package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/registry"
)

type rootsOf string

func (r rootsOf) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///" + string(r), Name: string(r)}}}, nil
}

// connClient connects a real mcp-go client, declaring roots, to s over an
// in-memory connection served by ServeConn.
func connClient(t *testing.T, s *Server, name string, served *sync.WaitGroup) *client.Client {
	t.Helper()
	srvEnd, cliEnd := net.Pipe()
	served.Go(func() {
		defer srvEnd.Close()
		if err := s.ServeConn(t.Context(), srvEnd, srvEnd); err != nil {
			t.Errorf("ServeConn: %v", err)
		}
	})
	//lint:ignore SA1019 kiln sends requests to clients before 2026-07-28 only; that is what this test covers
	legacy := client.WithLegacyProtocolOnly()
	c := client.NewClient(transport.NewIO(cliEnd, cliEnd, io.NopCloser(strings.NewReader(""))),
		client.WithRootsHandler(rootsOf(name)), legacy)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: "2025-11-25", ClientInfo: mcp.Implementation{Name: name, Version: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Two connections are two sessions: each lists tools, a request kiln asks
// of one session (roots) reaches that session's client only, and closing a
// connection ends its session.
func TestServeConnSessionsAreSeparate(t *testing.T) {
	ended := make(chan string, 2)
	s := New(Options{Version: "test", Registry: registry.New(),
		Config:       &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()},
		SessionEnded: func(id string) { ended <- id }})
	var served sync.WaitGroup
	ada, bob := connClient(t, s, "ada", &served), connClient(t, s, "bob", &served)
	for _, c := range []*client.Client{ada, bob} {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil || len(res.Tools) != len(metaTools) {
			t.Fatalf("tools/list: %v, %d tools, want %d", err, len(res.Tools), len(metaTools))
		}
	}

	s.sessions.mu.Lock()
	var sessions []*connSession
	for _, sess := range s.sessions.all {
		sessions = append(sessions, sess.(*connSession))
	}
	s.sessions.mu.Unlock()
	if len(sessions) != 2 || sessions[0].id == sessions[1].id {
		t.Fatalf("%d sessions registered, want two distinct", len(sessions))
	}
	for _, sess := range sessions {
		ctx := s.mcp.WithContext(t.Context(), sess)
		raw, err := s.askSession(ctx, string(mcp.MethodListRoots), nil)
		if err != nil {
			t.Fatal(err)
		}
		var res mcp.ListRootsResult
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Roots) != 1 {
			t.Fatalf("roots %s: %v", raw, err)
		}
		if want := sess.GetClientInfo().Name; res.Roots[0].Name != want {
			t.Errorf("session of %s answered with the roots of %s", want, res.Roots[0].Name)
		}
	}

	ada.Close()
	if id := <-ended; id != sessions[0].id && id != sessions[1].id {
		t.Errorf("ended session %q is neither of %q, %q", id, sessions[0].id, sessions[1].id)
	}
	if _, err := bob.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Errorf("bob's session ended with ada's: %v", err)
	}
	bob.Close()
	<-ended
	served.Wait()
}

// A malformed line gets a JSON-RPC error on that connection and the
// session goes on.
func TestServeConnAnswersParseErrors(t *testing.T) {
	s := New(Options{Version: "test", Registry: registry.New(),
		Config: &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}})
	srvEnd, cliEnd := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeConn(t.Context(), srvEnd, srvEnd) }()
	go func() {
		io.WriteString(cliEnd, "{not json\n")
		io.WriteString(cliEnd, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
	}()
	dec := json.NewDecoder(cliEnd)
	var first, second struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := dec.Decode(&first); err != nil || first.Error == nil || first.Error.Code != mcp.PARSE_ERROR {
		t.Errorf("malformed line answered %+v, %v; want a parse error", first, err)
	}
	if err := dec.Decode(&second); err != nil || string(second.ID) != "7" || second.Error != nil {
		t.Errorf("ping after a malformed line answered %+v, %v", second, err)
	}
	cliEnd.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeConn: %v", err)
	}
}

// A question kiln asked a connection's client fails as soon as the
// connection closes: nobody is left to answer it, and the backend that
// asked must not wait out its timeout (a stdio backend's question has
// none of its own, so it waited exchangeIdle).
func TestServeConnQuestionEndsWithTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{Version: "test", Registry: registry.New(),
			Config: &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}})
		srvEnd, cliEnd := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- s.ServeConn(context.Background(), srvEnd, srvEnd) }()
		synctest.Wait()
		s.sessions.mu.Lock()
		var sess *connSession
		for _, cs := range s.sessions.all {
			sess = cs.(*connSession)
		}
		s.sessions.mu.Unlock()
		asked := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(s.mcp.WithContext(context.Background(), sess), exchangeIdle)
			defer cancel()
			_, err := s.askSession(ctx, string(mcp.MethodListRoots), nil)
			asked <- err
		}()
		line, err := bufio.NewReader(cliEnd).ReadString('\n')
		if err != nil || !strings.Contains(line, `"roots/list"`) {
			t.Fatalf("client read %q, %v; want the roots/list request", line, err)
		}
		cliEnd.Close() // the client goes away without answering
		if err := <-served; err != nil {
			t.Errorf("ServeConn: %v", err)
		}
		err = <-asked
		if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "disconnected") {
			t.Errorf("question to a closed connection ended with %v; want it refused as disconnected at once", err)
		}
	})
}

// A question kiln gives up on (its backend's calls ended) is withdrawn at
// the client with notifications/cancelled, so the client stops asking its
// user.
func TestServeConnWithdrawnQuestionIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { withdrawnQuestion(t) })
}

func withdrawnQuestion(t *testing.T) {
	s := New(Options{Version: "test", Registry: registry.New(),
		Config: &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}})
	srvEnd, cliEnd := net.Pipe()
	defer cliEnd.Close()
	go func() { _ = s.ServeConn(t.Context(), srvEnd, srvEnd) }()
	synctest.Wait()
	var sess *connSession
	s.sessions.mu.Lock()
	for _, cs := range s.sessions.all {
		sess = cs.(*connSession)
	}
	s.sessions.mu.Unlock()
	ctx, cancel := context.WithCancel(s.mcp.WithContext(t.Context(), sess))
	asked := make(chan error, 1)
	go func() {
		_, err := s.askSession(ctx, string(mcp.MethodElicitationCreate), json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
		asked <- err
	}()
	dec := json.NewDecoder(cliEnd)
	var req, note struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if err := dec.Decode(&req); err != nil || req.Method != string(mcp.MethodElicitationCreate) {
		t.Fatalf("client read %+v, %v; want the elicitation", req, err)
	}
	cancel()
	if err := dec.Decode(&note); err != nil || note.Method != string(mcp.MethodNotificationCancelled) || string(note.Params.RequestID) != string(req.ID) {
		t.Errorf("after the question was withdrawn the client read %+v, %v; want notifications/cancelled for request %s", note, err, req.ID)
	}
	if err := <-asked; err == nil {
		t.Error("a withdrawn question returned an answer")
	}
}
