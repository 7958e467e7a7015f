package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/kilnmcp/kiln/runtime/backend"
)

// ClientSession is the client session a call came from, as a backend's
// requests to the client (sampling/createMessage, elicitation/create,
// roots/list) need it. The server implements it, one value per call.
type ClientSession interface {
	// ClientRequest asks the client and returns its raw result, or an
	// error at once when the client cannot answer (it did not declare the
	// capability).
	ClientRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// SessionID tells one client session from another.
	SessionID() string
}

// ObserverFrom returns the observer WithObserver put in ctx, or nil.
func ObserverFrom(ctx context.Context) *Observer {
	obs, _ := ctx.Value(observerKey{}).(*Observer)
	return obs
}

// withClient gives a backend call the context that routes the backend's
// requests to the caller's session exactly, where the SDK can tie a
// request to the call (2026-07-28 input-required rounds, a streamable HTTP
// backend's response stream).
func withClient(ctx context.Context) context.Context {
	if obs := ObserverFrom(ctx); obs != nil && obs.Client != nil {
		return backend.WithRequester(ctx, obs.Client)
	}
	return ctx
}

// clientRequest routes a backend's request that came without a call in its
// context: stdio and SSE backends before 2026-07-28 never say which call a
// request belongs to. It goes to the caller when every call in flight on
// the backend comes from one client session; with calls from several
// sessions it is refused, because asking the wrong user is worse than
// failing. roots/list outside any call (servers ask at connect and after
// roots/list_changed) goes to the only connected client session, if there
// is exactly one.
func (d *Dispatcher) clientRequest(ctx context.Context, name, method string, params json.RawMessage) (json.RawMessage, error) {
	return d.clientRequestOn(ctx, name, name, method, params)
}

// clientRequestOn is clientRequest for a request that came on the backend
// session key names (see callNotification).
func (d *Dispatcher) clientRequestOn(ctx context.Context, name, key, method string, params json.RawMessage) (json.RawMessage, error) {
	return d.clientRequestFor(ctx, name, key, nil, method, params)
}

// clientRequestFor is clientRequestOn for a backend session that owner,
// when set, opened for itself alone (session.go): a request outside any of
// its calls goes to owner, the only client it can be for.
func (d *Dispatcher) clientRequestFor(ctx context.Context, name, key string, owner ClientSession, method string, params json.RawMessage) (json.RawMessage, error) {
	d.obs.mu.Lock()
	sessions := map[string]ClientSession{}
	for _, obs := range listening(d.obs.byBackend[key]) {
		if obs.Client != nil {
			sessions[obs.Client.SessionID()] = obs.Client
		}
	}
	if len(sessions) == 1 {
		var c ClientSession
		for _, only := range sessions {
			c = only
		}
		if method == "roots/list" {
			d.obs.mu.Unlock()
			// The session's roots, not a question about the call: a
			// backend asks after roots/list_changed, and a short call
			// ending first must not withdraw it (the backend would keep
			// the old roots).
			return c.ClientRequest(ctx, method, params)
		}
		qctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		end := d.obs.askLocked(key, &question{session: c.SessionID(), cancel: cancel})
		d.obs.mu.Unlock()
		defer end()
		res, err := c.ClientRequest(qctx, method, params)
		if err != nil && errors.Is(context.Cause(qctx), errCallsEnded) {
			return nil, fmt.Errorf("kiln withdrew %s from backend %q: %w", method, name, errCallsEnded)
		}
		return res, err
	}
	d.obs.mu.Unlock()
	if len(sessions) == 0 && owner != nil {
		return owner.ClientRequest(ctx, method, params)
	}
	if len(sessions) > 1 {
		d.log.Warn("backend request refused: calls from several client sessions in flight", "backend", name, "method", method, "sessions", len(sessions))
		return nil, fmt.Errorf("kiln refused %s from backend %q: it arrived while the backend served calls from %d client sessions, and the backend's transport does not say which call it belongs to, so kiln will not guess whom to ask. "+
			"Retry when the other calls have finished; a backend on streamable HTTP or protocol 2026-07-28 has its requests routed exactly", method, name, len(sessions))
	}
	if method == "roots/list" && d.opts.SoleClient != nil {
		if c := d.opts.SoleClient(); c != nil {
			return c.ClientRequest(ctx, method, params)
		}
	}
	d.log.Info("backend request refused: no call in flight", "backend", name, "method", method)
	return nil, fmt.Errorf("kiln refused %s from backend %q: no client call is in flight on this backend, so no client session can answer; kiln forwards %s only while the backend serves a tool call a client made%s",
		method, name, method, rootsHint(method))
}

func rootsHint(method string) string {
	if method != "roots/list" {
		return ""
	}
	return " (roots/list outside a call is answered only while exactly one client session with roots is connected)"
}

// RootsChanged forwards client session sid's
// notifications/roots/list_changed to every connected backend (backends
// are shared, and each decides whether to ask roots/list again) and to
// the backend sessions kiln opened for that client session alone. It
// returns the backends that could not be told.
func (d *Dispatcher) RootsChanged(ctx context.Context, sid string) []string {
	d.mu.Lock()
	conns := map[string]*backend.Conn{}
	own := map[string]*backend.Conn{}
	for name, s := range d.slots {
		if s.state == StateHealthy && s.conn != nil {
			conns[name] = s.conn
		}
		if sc := s.sessions[sid]; sid != "" && sc != nil && sc.conn != nil {
			own[name] = sc.conn
		}
	}
	d.mu.Unlock()
	for name, c := range own {
		if err := c.RootsChanged(ctx); err != nil {
			d.log.Warn("could not forward roots/list_changed to a client session's own backend session", "backend", name, "err", err)
		}
	}
	var failed []string
	for name, c := range conns {
		if err := c.RootsChanged(ctx); err != nil {
			d.log.Warn("could not forward roots/list_changed", "backend", name, "err", err)
			failed = append(failed, name)
		}
	}
	sort.Strings(failed)
	return failed
}
