package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
)

// A backend keeps one shared session, negotiated at the newest revision it
// speaks. Two kinds of caller cannot be served well on it, and get a
// backend session of their own (one per client session, opened at its
// first such call and closed when the client session ends or after
// sessionIdle):
//
//   - a client before 2026-07-28 that can answer sampling or elicitation,
//     calling a backend whose shared session is on 2026-07-28: a backend
//     sends those requests in-band during a call only on a session of that
//     client's era (the go-sdk's everything-server refuses to sample on a
//     2026-07-28 session), so the call goes over a session negotiated at
//     the client's revision;
//   - such a client calling a stdio or SSE backend of the older era while
//     another client session has a call in flight on the shared session:
//     those transports do not say which call a request belongs to, so on a
//     shared session kiln would have to refuse the second asker; on its
//     own session every request is that client's.
//
// The cost is a second backend process (stdio) or connection per such
// client session, paid only by clients that can be asked something. A
// session that cannot be opened (a backend that allows one instance, say)
// costs the client only its in-band questions: the call runs on the shared
// session.

// sessionIdle closes a per-client-session backend session nobody called
// for this long; client sessions are not always ended explicitly.
const sessionIdle = 5 * time.Minute

// inBand is implemented by ClientSession values whose client takes
// requests in the middle of a call (a session before 2026-07-28 that
// declared sampling or elicitation).
type inBand interface{ InBand() bool }

// sessionRetry is how long a client session whose own backend session
// failed to open uses the shared one instead before kiln dials again: a
// backend that cannot run a second instance (it locks its data, say) must
// not cost every call a failed start and a log line.
const sessionRetry = 30 * time.Second

// sessionConn is one client session's own session with a backend.
type sessionConn struct {
	ready chan struct{} // closed when the dial ended
	// dialing is true until the dial's outcome is recorded; cancel ends
	// the dial, and abandoned tells the dialer that closeSessions gave up
	// on it meanwhile (the client session or the supervisor ended), so
	// whatever it opened must be closed, not kept for an idle timer.
	dialing   bool
	cancel    context.CancelFunc
	abandoned bool
	conn      *backend.Conn
	err       error
	retry     time.Time // after a failed dial: when to dial again
	calls     int
	idle      *time.Timer
}

// sessionKey names the calls on a client session's own backend session in
// the observers, apart from the calls on the shared one.
func sessionKey(backend, session string) string { return backend + "\x00" + session }

// track registers the call on the shared session or, when it needs one,
// on a backend session of its client's own, which it returns (nil: the
// shared one). done ends the call's tracking.
func (d *Dispatcher) trackCall(ctx context.Context, s *supervisor, shared *backend.Conn) (*backend.Conn, backend.CallOptions, func(), error) {
	name := s.cfg.Name
	obs := ObserverFrom(ctx)
	var client ClientSession
	if obs != nil {
		client = obs.Client
	}
	ib, _ := client.(inBand)
	if ib == nil || !ib.InBand() {
		opts, done := d.obs.track(ctx, name)
		return shared, opts, done, nil
	}
	if s.cfg.Transport == config.TransportWorkspace {
		// Served inside kiln: it never asks the client anything, and a
		// second instance would split its per-session state.
		opts, done := d.obs.track(ctx, name)
		return shared, opts, done, nil
	}
	sid := client.SessionID()
	own := shared.Stateless()
	if !own && (s.cfg.Transport == config.TransportStdio || s.cfg.Transport == config.TransportSSE) {
		// Shared unless another session's call is in flight there,
		// decided and registered under one lock so two callers cannot
		// both take the shared session.
		opts, done, ok := d.obs.trackAlone(ctx, name, sid)
		if ok {
			return shared, opts, done, nil
		}
		own = true
	}
	if !own {
		opts, done := d.obs.track(ctx, name)
		return shared, opts, done, nil
	}
	conn, release, err := d.sessionConn(ctx, s, sid)
	if err != nil {
		return nil, backend.CallOptions{}, nil, err
	}
	if conn == nil {
		// No session of its own (it failed to open, logged once): the
		// call itself still runs on the shared session, where a question
		// the backend asks may be refused as it would be without one.
		opts, done := d.obs.track(ctx, name)
		return shared, opts, done, nil
	}
	opts, done := d.obs.track(ctx, sessionKey(name, sid))
	return conn, opts, func() { done(); release() }, nil
}

// sessionConn returns client session sid's own session with the slot's
// backend, dialing it on first use; release marks the call over. It
// returns no session and no error when there is none to use (the dial
// failed, recently or now, or the slot is shutting down): the caller falls
// back to the shared session. The error is for a call canceled while it
// waited for the dial.
func (d *Dispatcher) sessionConn(ctx context.Context, s *supervisor, sid string) (*backend.Conn, func(), error) {
	name := s.cfg.Name
	d.mu.Lock()
	if s.sessionsOver {
		d.mu.Unlock()
		return nil, nil, nil
	}
	if s.sessions == nil {
		s.sessions = map[string]*sessionConn{}
	}
	sc := s.sessions[sid]
	if sc != nil && !sc.dialing && sc.conn == nil {
		if time.Now().Before(sc.retry) {
			d.mu.Unlock()
			return nil, nil, nil
		}
		delete(s.sessions, sid)
		sc = nil
	}
	dial := sc == nil
	var dctx context.Context
	if dial {
		// The dial outlives the call that started it (other calls of the
		// session wait for it), but not the session or the supervisor:
		// closeSessions cancels it.
		var cancel context.CancelFunc
		dctx, cancel = context.WithCancel(detached(ctx))
		sc = &sessionConn{ready: make(chan struct{}), dialing: true, cancel: cancel}
		s.sessions[sid] = sc
	}
	sc.calls++
	cfg, connectTimeout := s.cfg, d.cfg.Gateway.ConnectTimeout
	var guard *backend.Guard
	if s.dynamic {
		// A registration's connections are checked like its shared one's.
		guard = &backend.Guard{Allow: d.cfg.Gateway.Registration.AllowHosts, Self: d.opts.Self}
	}
	d.mu.Unlock()
	release := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		sc.calls--
		if sc.calls == 0 && sc.conn != nil {
			if sc.idle == nil {
				sc.idle = time.AfterFunc(sessionIdle, func() { d.dropSession(s, sid, sc) })
			} else {
				sc.idle.Reset(sessionIdle)
			}
		}
	}
	if dial {
		var owner ClientSession
		if obs := ObserverFrom(ctx); obs != nil {
			owner = obs.Client
		}
		d.dialSession(dctx, s, sid, sc, cfg, connectTimeout, guard, owner)
	}
	select {
	case <-sc.ready:
	case <-ctx.Done():
		release()
		return nil, nil, &Error{Code: CodeCanceled, Backend: name, Err: ctx.Err(),
			Message: fmt.Sprintf("the call to %s was canceled while kiln opened a session with it for this client", name)}
	}
	if sc.conn == nil {
		release()
		return nil, nil, nil
	}
	return sc.conn, release, nil
}

// detached is ctx without its cancellation and without the call it came
// from: the context a backend session is dialed with stays the context of
// the session's stdio transport (mcp-go hands it to the handler of every
// request the backend sends there), so the first call's requester in it
// sent every later question of the session straight to that call's
// client. Those questions bypassed clientRequestOn, which withdraws a
// question when the calls it may belong to end: a backend that gave up
// left the client asking its user until exchangeIdle. The session's owner
// still gets what the backend asks outside any call (clientRequestFor).
func detached(ctx context.Context) context.Context {
	return WithObserver(backend.WithRequester(context.WithoutCancel(ctx), nil), nil)
}

// errSessionEnded is a dial's outcome when its client session or the
// backend's supervisor ended while it ran.
var errSessionEnded = errors.New("the client session or the backend ended while its session was being opened")

// dialSession opens sc, client session sid's own session with the slot's
// backend, and records the outcome; owner is sid's client session.
func (d *Dispatcher) dialSession(ctx context.Context, s *supervisor, sid string, sc *sessionConn, cfg config.Backend, connectTimeout time.Duration, guard *backend.Guard, owner ClientSession) {
	name := cfg.Name
	key := sessionKey(name, sid)
	var hc *http.Client
	var err error
	if d.opts.HTTPClient != nil && cfg.Transport != config.TransportStdio {
		hc, err = d.opts.HTTPClient(&cfg) // the backend's OAuth client, as for its shared session
	}
	var conn *backend.Conn
	if err == nil {
		conn, err = backend.DialTimeout(ctx, &cfg, connectTimeout, backend.Options{
			ClientVersion: d.opts.Version,
			Guard:         guard,
			HTTPClient:    hc,
			Legacy:        true,
			Log:           d.log,
			OnNotification: func(method string, params json.RawMessage) {
				d.callNotification(name, key, method, params)
			},
			OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				return d.clientRequestFor(ctx, name, key, owner, method, params)
			},
		})
	}
	sc.cancel()
	d.mu.Lock()
	sc.dialing = false
	abandoned := sc.abandoned
	switch {
	case abandoned:
		sc.err = errSessionEnded
	case err != nil:
		// Kept in the map, without a connection, until sessionRetry has
		// passed: the session's calls use the shared session meanwhile.
		sc.err, sc.retry = err, time.Now().Add(sessionRetry)
	default:
		sc.conn = conn
	}
	d.mu.Unlock()
	if abandoned && conn != nil {
		// Before the waiting calls go on, so none returns while the
		// process still runs.
		conn.Close()
	}
	close(sc.ready)
	switch {
	case abandoned:
	case err != nil:
		d.log.Warn("could not open a backend session for a client session; its calls use the backend's shared session, where the backend's sampling or elicitation requests may be refused",
			"backend", name, "retry_after", sessionRetry, "err", err)
	default:
		d.log.Info("backend session opened for a client session", "backend", name, "protocol", conn.ProtocolVersion())
		go func() {
			<-conn.Done()
			d.dropSession(s, sid, sc)
		}()
	}
}

// dropSession closes sc if it is still sid's session with the slot's
// backend and no call is using it.
func (d *Dispatcher) dropSession(s *supervisor, sid string, sc *sessionConn) {
	d.mu.Lock()
	if s.sessions[sid] != sc || (sc.calls > 0 && !closed(sc.conn)) {
		d.mu.Unlock()
		return
	}
	delete(s.sessions, sid)
	idle := sc.idle
	d.mu.Unlock()
	if idle != nil {
		idle.Stop()
	}
	if sc.conn != nil {
		sc.conn.Close()
	}
}

func closed(c *backend.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// closeSessions closes the slot's per-client-session backend sessions:
// all of them (sid ""), or client session sid's. One still dialing is
// canceled, and closed by its dialer if it opens anyway.
func (s *supervisor) closeSessions(sid string) {
	s.mu.Lock()
	var conns []*backend.Conn
	for id, sc := range s.sessions {
		if sid != "" && id != sid {
			continue
		}
		delete(s.sessions, id)
		if sc.dialing {
			sc.abandoned = true
			sc.cancel()
			continue
		}
		if sc.idle != nil {
			sc.idle.Stop()
		}
		if sc.conn != nil {
			conns = append(conns, sc.conn)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// endSessions is closeSessions("") for a supervisor that is done: no
// client session opens a backend session of its own through it again.
func (s *supervisor) endSessions() {
	s.mu.Lock()
	s.sessionsOver = true
	s.mu.Unlock()
	s.closeSessions("")
}
