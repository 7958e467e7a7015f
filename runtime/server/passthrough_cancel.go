package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	// announced holds the requests the stdio read loop passed to the SDK
	// and the hook has not tracked yet, true once canceled: the SDK serves
	// each on a goroutine of its own, so a notifications/cancelled on the
	// next line could be read before the request is tracked, and was lost.
	announced map[string]map[string]bool // session -> id -> canceled
}

// announce notes a subscription request of session that the hook will
// track (or forget), so a cancellation read before then is kept for it.
func (t *pendingSubs) announce(session string, id json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.announced == nil {
		t.announced = map[string]map[string]bool{}
	}
	if t.announced[session] == nil {
		t.announced[session] = map[string]bool{}
	}
	// A request the SDK never hands the hook would stay announced until
	// its session ends; the cap bounds what a client sending such lines
	// can pile up.
	if len(t.announced[session]) < maxAnnounced {
		t.announced[session][string(id)] = false
	}
}

// maxAnnounced bounds one session's announced requests.
const maxAnnounced = 256

// forget drops the announcement of a request the hook does not track
// (one the SDK refuses in its protocol era) and reports whether it was
// canceled meanwhile; the caller holds mu.
func (t *pendingSubs) forget(session, key string) (canceled bool) {
	canceled = t.announced[session][key]
	delete(t.announced[session], key)
	if len(t.announced[session]) == 0 {
		delete(t.announced, session)
	}
	return canceled
}

// unannounce is forget for the hook.
func (t *pendingSubs) unannounce(session string, id json.RawMessage) {
	t.mu.Lock()
	t.forget(session, string(id))
	t.mu.Unlock()
}

// track returns ctx made cancelable by cancel and sessionEnded, and the
// func that forgets it once the request is answered. A request canceled
// since it was announced starts canceled.
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
	if t.forget(session, key) {
		cancel(errClientCanceled)
	}
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
	key := string(n.Params.RequestID)
	t.mu.Lock()
	h := t.all[session][key]
	if _, ok := t.announced[session][key]; ok && h == nil {
		t.announced[session][key] = true
	}
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
	delete(t.announced, session)
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

// announcePending notes a resources/subscribe or unsubscribe of session
// that the stdio read loop passes to the SDK (pendingSubs.announced).
func (s *Server) announcePending(session string, id json.RawMessage) {
	if p := s.pass; p != nil {
		p.pending.announce(session, id)
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
		if sid == "" || s.pass == nil || !s.pass.pending.any(sid) {
			h.ServeHTTP(w, r)
			return
		}
		body, ok := postBody(r)
		if ok && bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
			s.cancelPending(sid, body)
		}
		h.ServeHTTP(w, r)
	})
}
