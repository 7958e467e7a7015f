package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// callClient is the client session of one tool call, as backends' requests
// to the client need it (dispatch.ClientSession). It keeps the call's
// request context on purpose: the SDK finds the session in it, and on
// streamable HTTP the response stream of the call to ask on.
type callClient struct {
	s    *Server
	call context.Context
	id   string
	// ex is set for a 2026-07-28 request, which cannot be sent requests:
	// the question goes back to the client as an input-required result.
	ex *exchange
}

func (s *Server) newCallClient(ctx context.Context, ex *exchange) *callClient {
	c := &callClient{s: s, call: ctx, ex: ex}
	if sess := server.ClientSessionFromContext(ctx); sess != nil && sess.SessionID() != "" {
		c.id = sess.SessionID()
	} else {
		// Stateless requests share no session: each call is its own.
		c.id = "call-" + randomToken()
	}
	return c
}

// SessionID tells one client session from another.
func (c *callClient) SessionID() string { return c.id }

// InBand reports whether the client takes sampling or elicitation requests
// in the middle of a call: a session before 2026-07-28 that declared
// either. The dispatcher gives such a client's calls a backend session of
// its era where the shared one cannot carry its questions.
func (c *callClient) InBand() bool {
	if c.ex != nil || modern(c.call) || server.ClientSessionFromContext(c.call) == nil {
		return false
	}
	caps := c.capabilities()
	return caps.Sampling != nil || caps.Elicitation != nil
}

// ClientRequest asks the client that made the call. A client that did not
// declare the capability is never asked: the backend gets an error at once.
func (c *callClient) ClientRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := capable(c.capabilities(), method, params); err != nil {
		return nil, err
	}
	if c.ex != nil {
		// The request that started the run has ended; the run goes on.
		return c.ex.ask(ctx, method, params)
	}
	// The request keeps the call's session (and, while the call lasts, its
	// response stream) but not its end: a question routed here without a
	// call of its own (a stdio backend's) may outlive the call it was
	// matched with. It ends when the backend stops waiting (with the call,
	// where the backend's transport ties the two), or after exchangeIdle.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(c.call), exchangeIdle)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	return c.s.askSession(rctx, method, params)
}

// capabilities are the client's declared capabilities: per request on
// 2026-07-28, from initialize before.
func (c *callClient) capabilities() mcp.ClientCapabilities {
	return clientCapabilities(c.call)
}

func clientCapabilities(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return sess.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// capable reports, as an error a backend (and the model reading its
// result) can act on, a request the client did not declare it can answer.
func capable(caps mcp.ClientCapabilities, method string, params json.RawMessage) error {
	missing := ""
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		if caps.Sampling == nil {
			missing = "sampling"
		}
	case string(mcp.MethodElicitationCreate):
		var p struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(params, &p)
		switch {
		case caps.Elicitation == nil:
			missing = "elicitation"
		case p.Mode == "url" && caps.Elicitation.URL == nil:
			missing = "elicitation.url"
		case p.Mode != "url" && caps.Elicitation.Form == nil && caps.Elicitation.URL != nil:
			// An empty elicitation capability means form mode.
			missing = "elicitation.form"
		}
	case string(mcp.MethodListRoots):
		if caps.Roots == nil {
			missing = "roots"
		}
	default:
		return fmt.Errorf("kiln does not forward %s requests to clients", method)
	}
	if missing == "" {
		return nil
	}
	return fmt.Errorf("kiln cannot forward %s: the client session that made this call did not declare the %q capability, so it cannot answer; the backend must go on without it", method, missing)
}

// askSession sends a request to a client session that predates
// 2026-07-28, on the call's own stream where the transport has one.
func (s *Server) askSession(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var res any
	var err error
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("malformed sampling/createMessage params: %w", err)
		}
		//lint:ignore SA1019 forwarding a backend's request for a client that predates 2026-07-28
		res, err = s.mcp.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: p})
	case string(mcp.MethodElicitationCreate):
		var p mcp.ElicitationParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("malformed elicitation/create params: %w", err)
		}
		res, err = s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{Params: p})
	case string(mcp.MethodListRoots):
		res, err = s.mcp.RequestRoots(ctx, mcp.ListRootsRequest{})
	}
	if err != nil {
		return nil, fmt.Errorf("the client did not answer %s: %w", method, err)
	}
	return json.Marshal(res)
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sessions tracks connected client sessions, so a backend's roots/list
// outside any call can go to the only one there is (kiln over stdio).
type sessions struct {
	mu  sync.Mutex
	all map[string]server.ClientSession
}

func (s *Server) clientHooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(_ context.Context, sess server.ClientSession) {
		s.sessions.mu.Lock()
		defer s.sessions.mu.Unlock()
		if s.sessions.all == nil {
			s.sessions.all = map[string]server.ClientSession{}
		}
		s.sessions.all[sess.SessionID()] = sess
	})
	h.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		s.sessions.mu.Lock()
		delete(s.sessions.all, sess.SessionID())
		s.sessions.mu.Unlock()
		if s.opts.SessionEnded != nil {
			s.opts.SessionEnded(sess.SessionID())
		}
	})
}

// SoleClient returns the only connected client session when it declared
// roots, else nil; dispatch.Options.SoleClient.
func (s *Server) SoleClient() dispatch.ClientSession {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if len(s.sessions.all) != 1 {
		return nil
	}
	for _, sess := range s.sessions.all {
		info, ok := sess.(server.SessionWithClientInfo)
		if !ok || info.GetClientCapabilities().Roots == nil {
			return nil
		}
		return &callClient{s: s, call: s.mcp.WithContext(context.Background(), sess), id: sess.SessionID()}
	}
	return nil
}

// rootsChanged passes a client's notifications/roots/list_changed on to
// the backends, off the client's message loop (an HTTP backend may be
// slow to take it).
func (s *Server) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	if s.opts.RootsChanged != nil {
		ctx, id := context.WithoutCancel(ctx), sessionID(ctx)
		safe.Go(s.log, "passing the client's new roots to the backends", func() { s.opts.RootsChanged(ctx, id) })
	}
}

// initialized tells the backends to ask for roots again once the only
// client has declared roots: a backend asks when it connects, often before
// any client is there, and what it serves must not depend on that race.
func (s *Server) initialized(ctx context.Context, n mcp.JSONRPCNotification) {
	if s.SoleClient() != nil {
		s.rootsChanged(ctx, n)
	}
}
