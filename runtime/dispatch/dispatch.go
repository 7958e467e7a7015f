package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/schema"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// State is where a backend connection is in its life.
type State string

// States reported in Status.
const (
	StateStarting  State = "starting"
	StateHealthy   State = "healthy"
	StateUnhealthy State = "unhealthy"
	StateStopped   State = "stopped"
	StateDisabled  State = "disabled"
	// StateNeedsLogin: the backend's OAuth token expired and cannot be
	// refreshed; its error names the `kiln auth login` command to run.
	StateNeedsLogin State = "needs_login"
)

// Options configure a Dispatcher.
type Options struct {
	Version string // kiln's version, sent to backends as clientInfo
	Logger  *slog.Logger
	// OnCall is told of every call a backend answered without isError,
	// by tool ID; search uses it for its usage boost.
	OnCall func(id string)
	// OnConnect is told, on its own goroutine, each time a backend
	// connects: the catalog compares its live tools with the compiled ones.
	// The backend's Status shows Listing until it returns, and /readyz
	// waits for that, so it must end in bounded time.
	OnConnect func(backend string)
	// OnListChanged is told when a backend announces that its tools,
	// resources or prompts changed; kind is "tools", "resources" or
	// "prompts".
	OnListChanged func(backend, kind string)
	// Refresh, when set, lists a connected backend's live tools into the
	// registry now. A call naming a tool the registry lacks, on a backend
	// still connecting (one not compiled in has no tools until it
	// connects), waits for the connection and asks Refresh before it
	// reports the tool unknown.
	Refresh func(ctx context.Context, backend string) error
	// OnResourceUpdated is told of each notifications/resources/updated a
	// backend sends, with its raw params.
	OnResourceUpdated func(backend string, params json.RawMessage)
	// OnLog is told of each log message a backend sends that no single
	// call listens to (sent outside calls, or while several run).
	OnLog func(backend string, params json.RawMessage)
	// SoleClient returns the only connected client session that declared
	// roots, or nil when there are none or several; a backend's roots/list
	// outside any call goes to it.
	SoleClient func() ClientSession
	// Self lists kiln's own listeners (the --http address, any other
	// port it serves): backends registered at run time may never connect
	// to them.
	Self []netip.AddrPort
	// HTTPClient, when set, gives an HTTP or SSE backend the client its
	// requests go through (runtime/oauth's, for backends with auth:).
	HTTPClient func(*config.Backend) (*http.Client, error)
	// OnEvent, when set, is told of supervision events: "restart" when a
	// restart is scheduled after a failure, "circuit_open" when health
	// probes failed and calls start failing fast (metrics count them).
	OnEvent func(backend, event string)
}

func (d *Dispatcher) event(backend, event string) {
	if d.opts.OnEvent != nil {
		d.opts.OnEvent(backend, event)
	}
}

// Dispatcher implements toolcall.Caller over live backend connections and
// supervises them: restarts, health probes, per-backend limits.
type Dispatcher struct {
	reg   *registry.Registry
	opts  Options
	log   *slog.Logger
	valid *schema.Validator

	mu     sync.Mutex
	cfg    *config.Config         // replaced by Reload
	slots  map[string]*supervisor // each backend's supervisor, by name
	ctx    context.Context        // set by Start; supervisors added later run under it
	cancel context.CancelFunc
	recent *recentLog
	obs    observers
	// closed is set by Close: no backend starts after it. stopping counts
	// backends being stopped off the caller's path, which Close waits for.
	closed   bool
	stopping sync.WaitGroup
	// firstRetry and maxRetry bound the restart backoff; tests shorten
	// them.
	firstRetry, maxRetry time.Duration
}

// New returns a dispatcher for the backends in cfg. Nothing connects until
// Start.
func New(reg *registry.Registry, cfg *config.Config, opts Options) *Dispatcher {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{reg: reg, cfg: cfg, opts: opts, log: log, valid: schema.New(), slots: map[string]*supervisor{},
		recent:     newRecentLog(recentCalls),
		firstRetry: firstRetry, maxRetry: maxRetry}
	for i := range cfg.Backends {
		b := cfg.Backends[i]
		d.slots[b.Name] = d.newSupervisor(b, false)
	}
	return d
}

// Start connects every enabled backend concurrently in the background and
// returns at once. Each backend is then supervised until Close.
func (d *Dispatcher) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx, d.cancel = context.WithCancel(ctx)
	for _, s := range d.slots {
		s.start(d.ctx)
	}
}

// WaitReady blocks until every enabled backend finished its first connect
// attempt or ctx ends.
func (d *Dispatcher) WaitReady(ctx context.Context) error {
	d.mu.Lock()
	slots := make([]*supervisor, 0, len(d.slots))
	for _, s := range d.slots {
		slots = append(slots, s)
	}
	d.mu.Unlock()
	for _, s := range slots {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// CallTool validates args against the tool's recorded schema and calls it
// on its backend within the backend's timeout and concurrency limit.
func (d *Dispatcher) CallTool(ctx context.Context, backendName, tool string, args json.RawMessage) (*toolcall.Result, error) {
	start := time.Now()
	res, err := d.callTool(ctx, backendName, tool, args)
	rec := CallRecord{Time: start, Backend: backendName, Tool: tool, Duration: time.Since(start), Outcome: outcome(res, err)}
	d.recent.add(rec)
	if rec.Outcome != "ok" {
		d.mu.Lock()
		if s, ok := d.slots[backendName]; ok {
			s.errs++
		}
		d.mu.Unlock()
	}
	return res, err
}

func (d *Dispatcher) callTool(ctx context.Context, backendName, tool string, args json.RawMessage) (*toolcall.Result, error) {
	id := backendName + "." + tool
	t, err := d.reg.Resolve(id)
	if err != nil && d.awaitTools(ctx, backendName, tool) {
		t, err = d.reg.Resolve(id)
	}
	if err != nil {
		return nil, &Error{Code: CodeNotFound, Backend: backendName, Tool: tool, Err: err, Message: err.Error()}
	}
	if t.TaskRequired() {
		return nil, &Error{Code: CodeUnsupported, Backend: backendName, Tool: tool,
			Message: fmt.Sprintf("%s only runs as an MCP task (execution.taskSupport \"required\"), which kiln does not support yet; this tool cannot be called through kiln", id)}
	}
	if err := d.valid.Validate(id, t.InputSchema, args); err != nil {
		return nil, &Error{Code: CodeInvalidArgs, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s: %v\nExpected arguments: %s\nCall tool_info with tool_name %q and detail \"full\" for the whole schema.", id, err, t.Signature(), id)}
	}
	if held := d.reg.HeldArgs(id, args); len(held) > 0 {
		// drift: pin serves the reviewed schema; a parameter only the
		// live backend declares is part of the change held back.
		return nil, &Error{Code: CodeInvalidArgs, Backend: backendName, Tool: tool,
			Message: fmt.Sprintf("%s: argument %s is not in the tool's reviewed input schema: backend %q added it while kiln runs, and kiln holds that change back pending review (drift: pin). Call the tool without it.\nExpected arguments: %s",
				id, strings.Join(held, ", "), backendName, t.Signature())}
	}
	s, conn, lim, deadline, err := d.awaitConn(ctx, backendName, tool)
	if err != nil {
		return nil, err
	}
	release, err := s.acquire(ctx, lim, tool)
	if err != nil {
		return nil, err
	}
	defer release()

	// Time spent waiting for a starting backend counts against the call's
	// own timeout: the caller was promised one bound, not two.
	cctx, cancel := context.WithDeadline(withClient(ctx), deadline)
	defer cancel()
	conn, callOpts, done, err := d.trackCall(cctx, s, conn)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := conn.CallTool(cctx, tool, args, callOpts)
	d.noteLogin(s, tool, err)
	var login interface{ NeedsLogin() string }
	switch {
	case err == nil:
		if !res.IsError && d.opts.OnCall != nil {
			d.opts.OnCall(id)
		}
		return res, nil
	case errors.As(err, &login):
		return nil, &Error{Code: CodeBackend, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s failed: %v\nA person must run `%s`; kiln then uses the new token without a restart. kiln://backend/%s shows needs_login until then.", id, err, login.NeedsLogin(), backendName)}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, &Error{Code: CodeTimeout, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s did not answer before the caller's deadline (the call_tool_chain timeout); kiln told %s to stop; pass a larger timeout or split the work", id, backendName)}
	case ctx.Err() != nil:
		return nil, &Error{Code: CodeCanceled, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s was canceled by the client before %s answered; kiln told %s to stop", id, backendName, backendName)}
	case errors.Is(err, context.DeadlineExceeded):
		return nil, &Error{Code: CodeTimeout, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s did not answer within %s (backend %q call timeout); kiln told %s to stop; retry with a smaller request or raise backends.%s.timeout", id, lim.timeout, backendName, backendName, backendName)}
	case errors.Is(err, backend.ErrGone):
		return nil, &Error{Code: CodeUnavailable, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s failed: backend %q stopped while running it: %v\nkiln restarts it automatically; read kiln://backend/%s for when, then retry.", id, backendName, err, backendName)}
	default:
		return nil, &Error{Code: CodeBackend, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s failed: %v\nRead kiln://backend/%s for the backend's state.", id, err, backendName)}
	}
}

// noteLogin records a call's step-up refusal on its supervisor, or clears the
// one an earlier call of the same tool left once the tool answers.
func (d *Dispatcher) noteLogin(s *supervisor, tool string, err error) {
	var login interface{ NeedsLogin() string }
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case errors.As(err, &login):
		s.login, s.loginTool = err, tool
	case err == nil && s.loginTool == tool:
		s.login, s.loginTool = nil, ""
	}
}

// limits are one backend's call limits, read together under the lock so a
// reload never shows a call half of each.
type limits struct {
	timeout   time.Duration
	queueWait time.Duration
}

// awaitConn returns the backend's live connection like conn, but a call to
// a backend that is still connecting waits for it, up to the call's own
// timeout, instead of failing: the first call after start (or after a
// registration restored at start) must not fail only because it came
// early. It returns the deadline the call itself must keep.
func (d *Dispatcher) awaitConn(ctx context.Context, name, tool string) (*supervisor, *backend.Conn, limits, time.Time, error) {
	var deadline time.Time
	var timer *time.Timer
	for {
		s, conn, lim, wait, err := d.connOrWait(name, tool)
		if deadline.IsZero() {
			deadline = time.Now().Add(lim.timeout)
		}
		if wait == nil {
			if timer != nil {
				timer.Stop()
			}
			return s, conn, lim, deadline, err
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-wait:
		case <-ctx.Done():
			timer.Stop()
			return nil, nil, lim, deadline, &Error{Code: CodeCanceled, Backend: name, Tool: tool, Err: ctx.Err(),
				Message: fmt.Sprintf("%s was canceled while backend %q was still connecting", what(name, tool), name)}
		case <-timer.C:
			return nil, nil, lim, deadline, &Error{Code: CodeStarting, Backend: name, Tool: tool,
				Message: fmt.Sprintf("backend %q did not finish connecting within the call's timeout (%s), so %s could not run. Read kiln://backend/%s for its state and last stderr lines, then retry",
					name, lim.timeout, what(name, tool), name)}
		}
	}
}

// awaitTools waits for a starting backend to connect and has its live
// tools listed, so a call to a backend not compiled in is not refused as
// unknown only because it came first. It reports whether the tools were
// refreshed.
func (d *Dispatcher) awaitTools(ctx context.Context, name, tool string) bool {
	if d.opts.Refresh == nil {
		return false
	}
	if _, _, _, wait, err := d.connOrWait(name, tool); wait == nil {
		// Connected: the registry knows its tools, unless the backend
		// is one it lists only once connected (not compiled in, a
		// workspace) and OnConnect's refresh has not finished yet.
		if _, known := d.reg.Backend(name); err != nil || known {
			return false
		}
	}
	_, _, lim, _, err := d.awaitConn(ctx, name, tool)
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	return d.opts.Refresh(rctx, name) == nil
}

// what names a call in messages: the tool, or the backend for requests
// that are not tool calls (resources, prompts, completions).
func what(backend, tool string) string {
	if tool == "" {
		return "the request to " + backend
	}
	return backend + "." + tool
}

// conn returns the backend's supervisor and live connection, or an error saying
// why there is none and what the caller can do. A starting backend is an
// error here; calls use awaitConn, which waits for it.
func (d *Dispatcher) conn(name, tool string) (*supervisor, *backend.Conn, limits, error) {
	s, conn, lim, wait, err := d.connOrWait(name, tool)
	if wait != nil {
		return nil, nil, lim, &Error{Code: CodeStarting, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is still connecting; read kiln://backend/%s for its state", name, name)}
	}
	return s, conn, lim, err
}

// connOrWait is conn's answer, or, for a starting backend, a channel that
// closes at its next state change.
func (d *Dispatcher) connOrWait(name, tool string) (*supervisor, *backend.Conn, limits, <-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.slots[name]
	if !ok {
		return nil, nil, limits{timeout: d.cfg.Gateway.CallTimeout}, nil, &Error{Code: CodeNotConfigured, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is compiled into kiln but not declared in its config; add backends.%s to %s to use it", name, name, d.cfg.EditHint())}
	}
	// The config gives every backend its timeout (gateway.call_timeout
	// unless it names its own).
	lim := limits{timeout: s.cfg.Timeout, queueWait: s.cfg.QueueWait}
	switch s.state {
	case StateHealthy:
		return s, s.conn, lim, nil, nil
	case StateStarting:
		return nil, nil, lim, s.changed, nil
	case StateDisabled:
		return nil, nil, lim, nil, &Error{Code: CodeUnavailable, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is disabled (backends.%s.enabled: false)", name, name)}
	default:
		return nil, nil, lim, nil, &Error{Code: CodeUnavailable, Backend: name, Tool: tool, Err: s.err, Message: s.unavailable()}
	}
}

// unavailable says why a stopped or unhealthy backend cannot take calls
// and when that may change. Called with d.mu held.
func (s *supervisor) unavailable() string {
	name := s.cfg.Name
	msg := fmt.Sprintf("backend %q is %s since %s", name, s.state, s.since.Format(time.RFC3339))
	if s.err != nil {
		msg += ": " + firstLines(s.err.Error(), 8)
	}
	if !s.retry.IsZero() {
		msg += fmt.Sprintf("\nkiln retries at %s; try again after that.", s.retry.Format(time.RFC3339))
	}
	return msg + fmt.Sprintf("\nRead kiln://backend/%s for details.", name)
}

// Tools lists a backend's tools as it publishes them now. A backend still
// connecting is waited for within ctx and its call timeout: list_changed
// can arrive before kiln has marked the connection up.
func (d *Dispatcher) Tools(ctx context.Context, name string) ([]manifest.Tool, error) {
	_, conn, _, _, err := d.awaitConn(ctx, name, "")
	if err != nil {
		return nil, err
	}
	return conn.ListTools(ctx)
}

// Snapshot records everything a connected backend offers, as kiln-gen
// record would.
func (d *Dispatcher) Snapshot(ctx context.Context, name string) (*manifest.Manifest, error) {
	_, conn, _, err := d.conn(name, "")
	if err != nil {
		return nil, err
	}
	return conn.Snapshot(ctx)
}

// Close stops every backend and waits for them to exit. Stopping cannot
// fail: a process that outlives SIGKILL is reported in the log. The error
// is for io.Closer.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	d.closed = true
	if d.cancel != nil {
		d.cancel()
	}
	slots := make([]*supervisor, 0, len(d.slots))
	for _, s := range d.slots {
		slots = append(slots, s)
	}
	d.mu.Unlock()
	stopAll(slots)
	d.stopping.Wait()
	return nil
}

// stopAll stops slots concurrently: each stdio backend may take its whole
// grace period.
func stopAll(slots []*supervisor) {
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Go(s.stop)
	}
	wg.Wait()
}

// names returns the supervised backends' names sorted; called with d.mu
// held.
func (d *Dispatcher) namesLocked() []string {
	names := make([]string, 0, len(d.slots))
	for n := range d.slots {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
