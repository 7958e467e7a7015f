package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

var (
	errClientCanceled = errors.New("the client canceled its request")
	errSessionGone    = errors.New("the client session ended")
)

// pendingSubs holds the cancel functions of the resources/subscribe and
// unsubscribe requests whose upstream request is in flight, by client
// session and raw JSON-RPC id. kiln forwards them from a hook that runs
// before mcp-go registers the request's own cancel, so without this table
// a client's notifications/cancelled never reached them, and neither did
// the end of an HTTP session (its POST may still be open).
type pendingSubs struct {
	mu  sync.Mutex
	all map[string]map[string]*context.CancelCauseFunc // session -> id -> cancel
}

// track returns ctx made cancelable by cancel and sessionEnded, and the
// func that forgets it once the request is answered.
func (t *pendingSubs) track(ctx context.Context, session string, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	h := &cancel
	key := string(id)
	t.mu.Lock()
	if t.all == nil {
		t.all = map[string]map[string]*context.CancelCauseFunc{}
	}
	if t.all[session] == nil {
		t.all[session] = map[string]*context.CancelCauseFunc{}
	}
	t.all[session][key] = h
	t.mu.Unlock()
	return ctx, func() {
		t.mu.Lock()
		if t.all[session][key] == h {
			delete(t.all[session], key)
			if len(t.all[session]) == 0 {
				delete(t.all, session)
			}
		}
		t.mu.Unlock()
		cancel(nil)
	}
}

// any reports whether session has a request pending, so other requests
// skip reading their body twice.
func (t *pendingSubs) any(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.all[session]) > 0
}

// cancel cancels session's request that the notifications/cancelled in
// msg names, if one is pending.
func (t *pendingSubs) cancel(session string, msg []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Params.RequestID == nil {
		return
	}
	t.mu.Lock()
	h := t.all[session][string(n.Params.RequestID)]
	t.mu.Unlock()
	if h != nil {
		(*h)(errClientCanceled)
	}
}

// sessionEnded cancels every pending request of session.
func (t *pendingSubs) sessionEnded(session string) {
	t.mu.Lock()
	pending := t.all[session]
	delete(t.all, session)
	t.mu.Unlock()
	for _, h := range pending {
		(*h)(errSessionGone)
	}
}

// cancelPending passes a client's notifications/cancelled to the pending
// subscription requests of session; the transports call it for every
// such notification they read.
func (s *Server) cancelPending(session string, msg []byte) {
	if p := s.pass; p != nil {
		p.pending.cancel(session, msg)
	}
}

// undoSubscription sends owner an unsubscribe from uri of kiln's own after
// a subscribe or unsubscribe was canceled in flight: the backend may or may
// not have acted on it, and kiln no longer wants the subscription, which
// no one would end otherwise. The backend's call timeout bounds it.
func (p *passthru) undoSubscription(ctx context.Context, owner, uri string) {
	if err := p.s.opts.Passthrough.Unsubscribe(context.WithoutCancel(ctx), owner, uri); err != nil {
		p.s.log.Warn("a canceled resource subscription change could not be undone at the backend; it may keep sending updates nobody gets", "backend", owner, "uri", uri, "err", err)
	}
}

// cancels passes the notifications/cancelled a client POSTs to
// cancelPending, under the session the request names: its Mcp-Session-Id
// on streamable HTTP, its sessionId query parameter on legacy SSE.
func (s *Server) cancels(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			sid = r.URL.Query().Get("sessionId")
		}
		if r.Method != http.MethodPost || r.Body == nil || sid == "" || s.pass == nil || !s.pass.pending.any(sid) {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			h.ServeHTTP(w, r) // the SDK reports unreadable bodies
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			s.cancelPending(sid, body)
		}
		h.ServeHTTP(w, r)
	})
}
