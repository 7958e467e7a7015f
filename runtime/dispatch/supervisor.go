package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// Restart policy: exponential backoff between attempts, and a cap on
// restarts in a sliding window so a crash loop cannot burn the machine.
const (
	firstRetry    = time.Second
	maxRetry      = 30 * time.Second
	restartWindow = 60 * time.Second
	maxRestarts   = 5
	// halfOpenAfter is how many health intervals an open circuit waits
	// before it probes again.
	halfOpenAfter = 3
)

// supervisor supervises one backend: it connects, watches the connection,
// probes its health and restarts it. It holds no pointer to the dispatcher:
// what it needs comes through host and link.
type supervisor struct {
	host    host
	log     *slog.Logger
	link    link
	dynamic bool

	// mu is the dispatcher's lock, shared by every supervisor; it guards
	// the fields below.
	mu       *sync.Mutex
	cfg      config.Backend
	state    State
	since    time.Time
	conn     *backend.Conn
	err      error     // why the backend is not healthy
	retry    time.Time // when the next connect or probe happens, while not healthy
	restarts []time.Time
	failures int // probes failed in a row
	lastOK   time.Time
	// listing is set from a connect until OnConnect's refresh of that
	// connection ends: connected, but its live tools, resources and
	// prompts may not be served yet. listGen names the connect, so an
	// older refresh that ends late does not clear a newer one's flag.
	listing bool
	listGen uint64

	sem chan struct{}
	// resized is closed and replaced when a reload swaps sem, so calls
	// queued on the old limit try the new one.
	resized  chan struct{}
	inFlight int
	queued   int
	calls    int64
	errs     int64
	gaveUp   bool
	// login is a call's step-up refusal (an OAuth backend that wants
	// more scope for loginTool than its token has): the connection stays
	// up for the other tools, but the backend shows needs_login with the
	// command until that tool succeeds or the backend reconnects.
	login     error
	loginTool string

	ready     chan struct{} // closed when the first connect attempt ends
	readyOnce sync.Once
	// changed is closed and replaced on every state change, so calls
	// waiting for a starting backend wake without polling.
	changed chan struct{}
	cancel  context.CancelFunc
	exited  chan struct{} // closed when the supervising goroutine returns
	// sessions are client sessions' own sessions with the backend, by
	// client session ID (session.go).
	sessions map[string]*sessionConn
	// sessionsOver is set when supervision ended: calls still arriving
	// use no session of their own, which nothing would close.
	sessionsOver bool
}

// host is what a supervisor asks of the dispatcher that runs it;
// *Dispatcher is one. Methods ending in Locked expect the lock held.
type host interface {
	configLocked() *config.Config
	closedLocked() bool
	retryBounds() (first, longest time.Duration)
	event(backend, event string)
	notification(backend, method string, params json.RawMessage)
	clientRequest(ctx context.Context, backend, method string, params json.RawMessage) (json.RawMessage, error)
}

// link holds the dispatcher options a supervisor dials with; they do not
// change after New.
type link struct {
	version    string
	self       []netip.AddrPort
	httpClient func(*config.Backend) (*http.Client, error)
	onConnect  func(backend string)
}

func (d *Dispatcher) configLocked() *config.Config { return d.cfg }
func (d *Dispatcher) closedLocked() bool           { return d.closed }

// retryBounds returns the restart backoff's first and longest waits;
// tests shorten them after New, so they are read when a backend starts.
func (d *Dispatcher) retryBounds() (first, longest time.Duration) {
	return d.firstRetry, d.maxRetry
}

func (d *Dispatcher) newSupervisor(b config.Backend, dynamic bool) *supervisor {
	s := &supervisor{host: d, mu: &d.mu, log: d.log, dynamic: dynamic, cfg: b,
		link: link{version: d.opts.Version, self: d.opts.Self, httpClient: d.opts.HTTPClient, onConnect: d.opts.OnConnect}, state: StateStarting, since: time.Now(),
		ready: make(chan struct{}), exited: make(chan struct{}), changed: make(chan struct{}), sem: make(chan struct{}, max(b.MaxConcurrent, 1)), resized: make(chan struct{})}
	if !b.Enabled {
		s.state = StateDisabled
		close(s.ready)
		close(s.exited)
	}
	return s
}

// start launches the supervisor; called with d.mu held.
func (s *supervisor) start(ctx context.Context) {
	if s.state == StateDisabled || s.cancel != nil || s.host.closedLocked() {
		return
	}
	ctx, s.cancel = context.WithCancel(ctx)
	go s.run(ctx)
}

// stop ends supervision and the connection, and waits for both.
func (s *supervisor) stop() {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-s.exited
}

// markReady records that the first connect attempt's outcome is known, so
// WaitReady never shows a failed start as still starting.
func (s *supervisor) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

func (s *supervisor) run(ctx context.Context) {
	defer close(s.exited)
	defer s.markReady()
	defer s.endSessions()
	log := s.log.With("backend", s.cfg.Name)
	firstRetry, maxRetry := s.host.retryBounds()
	wait := firstRetry
	for first := true; ; first = false {
		conn, err := s.dial(ctx, first)
		if ctx.Err() != nil {
			if conn != nil {
				conn.Close()
			}
			s.set(StateStopped, nil)
			return
		}
		if err == nil {
			s.markReady()
			up := time.Now()
			err = s.serve(ctx, conn, log)
			conn.Close()
			s.closeSessions("")
			if ctx.Err() != nil {
				s.set(StateStopped, nil)
				return
			}
			if time.Since(up) > restartWindow {
				wait = firstRetry // it ran well for a while: start the backoff over
			}
			err = conn.WithStderr(err, 10)
			log.Error("backend stopped", "err", err)
		} else {
			log.Error("backend failed to start", "err", err)
		}
		more := s.scheduleRestart(err, wait)
		if more {
			s.host.event(s.cfg.Name, "restart")
		}
		s.markReady()
		if !more {
			log.Error("backend restarted too often; kiln stopped restarting it", "restarts", maxRestarts, "window", restartWindow)
			return
		}
		select {
		case <-ctx.Done():
			s.set(StateStopped, nil)
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// dial makes one connect attempt and records its outcome.
func (s *supervisor) dial(ctx context.Context, first bool) (*backend.Conn, error) {
	s.mu.Lock()
	cfg := s.cfg
	gw := s.host.configLocked()
	connectTimeout := gw.Gateway.ConnectTimeout
	var guard *backend.Guard
	if s.dynamic {
		// Read per attempt: allow_hosts reloads with the config.
		guard = &backend.Guard{Allow: gw.Gateway.Registration.AllowHosts, Self: s.link.self}
	}
	if !first {
		s.state, s.since = StateStarting, time.Now()
		s.signalLocked()
	}
	s.mu.Unlock()
	start := time.Now()
	name := cfg.Name
	var hc *http.Client
	if s.link.httpClient != nil && cfg.Transport != config.TransportStdio {
		var err error
		if hc, err = s.link.httpClient(&cfg); err != nil {
			return nil, err
		}
	}
	conn, err := backend.DialTimeout(ctx, &cfg, connectTimeout, backend.Options{
		HTTPClient:    hc,
		ClientVersion: s.link.version,
		Guard:         guard,
		Log:           s.log,
		OnNotification: func(method string, params json.RawMessage) {
			s.host.notification(name, method, params)
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return s.host.clientRequest(ctx, name, method, params)
		},
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.state, s.conn, s.err, s.since, s.retry, s.failures, s.lastOK = StateHealthy, conn, nil, time.Now(), time.Time{}, 0, time.Now()
	s.listGen++
	gen := s.listGen
	s.listing = s.link.onConnect != nil
	s.signalLocked()
	s.mu.Unlock()
	s.log.Info("backend connected", "backend", name, "protocol", conn.ProtocolVersion(), "took", time.Since(start).Round(time.Millisecond))
	if s.link.onConnect != nil {
		safe.Go(s.log, "the refresh after backend "+name+" connected", func() {
			defer s.listed(gen)
			s.link.onConnect(name)
		})
	}
	return conn, nil
}

// listed records that the refresh after connect gen ended, failed or
// not: a refresh that failed has logged why, and waiting on would keep
// the gateway unready for a backend that is up.
func (s *supervisor) listed(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listGen == gen && s.listing {
		s.listing = false
		s.signalLocked()
	}
}

// scheduleRestart records a failure and the time of the next attempt. It
// reports false when the restart window is full: the backend is left
// unhealthy until its config changes or kiln restarts.
func (s *supervisor) scheduleRestart(cause error, wait time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.signalLocked()
	now := time.Now()
	wasUp := s.conn != nil
	s.conn = nil
	kept := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) < restartWindow {
			kept = append(kept, t)
		}
	}
	s.restarts = kept
	if len(s.restarts) >= maxRestarts {
		s.state, s.since, s.retry, s.gaveUp = StateUnhealthy, now, time.Time{}, true
		s.err = fmt.Errorf("restarted %d times within %s and failed again, so kiln stopped restarting it; last failure: %w\nFix the backend, then edit backends.%s in %s (kiln reloads it) or restart kiln",
			maxRestarts, restartWindow, cause, s.cfg.Name, s.host.configLocked().EditHint())
		return false
	}
	s.restarts = append(s.restarts, now)
	s.state = StateUnhealthy // it never connected this round
	if wasUp {
		s.state = StateStopped
	}
	var login interface{ NeedsLogin() string }
	if errors.As(cause, &login) {
		s.state = StateNeedsLogin
	}
	s.since, s.err, s.retry = now, cause, now.Add(wait)
	return true
}

// serve watches a live connection until it ends or ctx does, probing its
// health every interval. It returns why the connection ended.
func (s *supervisor) serve(ctx context.Context, conn *backend.Conn, log *slog.Logger) error {
	s.mu.Lock()
	h := s.host.configLocked().Gateway.Health
	s.mu.Unlock()
	// A random first delay spreads the probes of many backends over the
	// interval instead of firing them together.
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(h.Interval))) + h.Interval/2)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.Done():
			return fmt.Errorf("%w: %v", backend.ErrGone, conn.Exit())
		case <-timer.C:
		}
		pctx, cancel := context.WithTimeout(ctx, h.Timeout)
		err := conn.Probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.mu.Lock()
		h = s.host.configLocked().Gateway.Health
		next, opened := h.Interval, false
		switch {
		case err == nil:
			if s.state == StateUnhealthy {
				log.Info("backend recovered")
			}
			s.state, s.err, s.retry, s.failures, s.lastOK = StateHealthy, nil, time.Time{}, 0, time.Now()
		default:
			s.failures++
			if s.failures >= h.Failures {
				if s.state != StateUnhealthy {
					s.state, s.since = StateUnhealthy, time.Now()
					log.Warn("backend unhealthy: circuit open", "failures", s.failures, "err", err)
					opened = true
				}
				next = halfOpenAfter * h.Interval
				s.err = fmt.Errorf("%d health probes failed in a row (last: %v)", s.failures, err)
				s.retry = time.Now().Add(next)
			}
		}
		s.signalLocked()
		s.mu.Unlock()
		if opened {
			s.host.event(conn.Name(), "circuit_open")
		}
		timer.Reset(next)
	}
}

// set records a state with its cause.
func (s *supervisor) set(st State, err error) {
	s.mu.Lock()
	s.state, s.err, s.since, s.conn = st, err, time.Now(), nil
	s.login, s.loginTool = nil, ""
	s.signalLocked()
	s.mu.Unlock()
}

// signalLocked wakes every call waiting on the supervisor's state; called
// with mu held after a change.
func (s *supervisor) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// acquire takes one of the backend's call slots, waiting up to
// lim.queueWait.
func (s *supervisor) acquire(ctx context.Context, lim limits, tool string) (release func(), err error) {
	s.mu.Lock()
	sem, resized := s.sem, s.resized
	s.mu.Unlock()
	take := func(sem chan struct{}) func() {
		s.mu.Lock()
		s.inFlight++
		s.calls++
		s.mu.Unlock()
		return func() {
			<-sem
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}
	}
	select {
	case sem <- struct{}{}:
		return take(sem), nil
	default:
	}
	timer := time.NewTimer(lim.queueWait)
	defer timer.Stop()
	s.mu.Lock()
	s.queued++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
	}()
	for {
		select {
		case sem <- struct{}{}:
			return take(sem), nil
		case <-resized:
			// A reload changed max_concurrent: queue on the new limit,
			// within the same wait.
			s.mu.Lock()
			sem, resized = s.sem, s.resized
			s.mu.Unlock()
		case <-ctx.Done():
			return nil, &Error{Code: CodeCanceled, Backend: s.cfg.Name, Tool: tool, Err: ctx.Err(),
				Message: fmt.Sprintf("%s.%s was canceled while waiting for a free slot on backend %q", s.cfg.Name, tool, s.cfg.Name)}
		case <-timer.C:
			return nil, &Error{Code: CodeBusy, Backend: s.cfg.Name, Tool: tool,
				Message: fmt.Sprintf("backend %q is busy: all %d of its call slots (max_concurrent) are in use and none freed within %s; retry shortly, run fewer calls at once, or raise backends.%s.max_concurrent",
					s.cfg.Name, cap(sem), lim.queueWait, s.cfg.Name)}
		}
	}
}
