package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
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
)

// Options configure a Dispatcher.
type Options struct {
	Version string // kiln's version, sent to backends as clientInfo
	Logger  *slog.Logger
	// OnNotification receives backend notifications (progress, logging,
	// list_changed) tagged with the backend name.
	OnNotification func(backend, method string, params json.RawMessage)
	// OnCall is told of every call a backend answered without isError,
	// by tool ID; search uses it for its usage boost.
	OnCall func(id string)
}

// Dispatcher implements toolcall.Caller over live backend connections.
type Dispatcher struct {
	reg   *registry.Registry
	cfg   *config.Config
	opts  Options
	log   *slog.Logger
	valid *schema.Validator

	mu     sync.Mutex
	slots  map[string]*slot
	wg     sync.WaitGroup
	cancel context.CancelFunc // stops background connects; set by Start
}

type slot struct {
	cfg   *config.Backend
	state State
	since time.Time
	conn  *backend.Conn
	err   error
	retry time.Time     // when the next connect attempt starts, while unhealthy
	ready chan struct{} // closed when the first connect attempt ends
}

// Status is a snapshot of one backend's connection.
type Status struct {
	Name            string
	Transport       string
	State           State
	Since           time.Time
	Error           string
	ProtocolVersion string
	StderrTail      string
}

// New returns a dispatcher for the backends in cfg. Nothing connects until
// Start.
func New(reg *registry.Registry, cfg *config.Config, opts Options) *Dispatcher {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{reg: reg, cfg: cfg, opts: opts, log: log, valid: schema.New(), slots: map[string]*slot{}}
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		s := &slot{cfg: b, state: StateStarting, since: time.Now(), ready: make(chan struct{})}
		if !b.Enabled {
			s.state = StateDisabled
			close(s.ready)
		}
		d.slots[b.Name] = s
	}
	return d
}

// Start connects every enabled backend concurrently in the background and
// returns at once. A backend that fails to connect is retried with
// exponential backoff until it connects or Close is called.
func (d *Dispatcher) Start(ctx context.Context) {
	ctx, d.cancel = context.WithCancel(ctx)
	for _, s := range d.slots {
		if s.state != StateStarting {
			continue
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.connect(ctx, s)
		}()
	}
}

// WaitReady blocks until every enabled backend finished its first connect
// attempt or ctx ends.
func (d *Dispatcher) WaitReady(ctx context.Context) error {
	for _, s := range d.slots {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Backoff bounds for reconnecting a backend that failed to start.
const (
	firstRetry = time.Second
	maxRetry   = 30 * time.Second
)

func (d *Dispatcher) connect(ctx context.Context, s *slot) {
	first := true
	for wait := firstRetry; ; wait = min(2*wait, maxRetry) {
		if d.dial(ctx, s, wait, first) {
			return
		}
		first = false
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// dial makes one connect attempt and records its outcome; it reports
// whether the backend is now connected.
func (d *Dispatcher) dial(ctx context.Context, s *slot, nextWait time.Duration, first bool) bool {
	start := time.Now()
	name := s.cfg.Name
	conn, err := backend.DialTimeout(ctx, s.cfg, d.cfg.Gateway.ConnectTimeout, backend.Options{
		ClientVersion: d.opts.Version,
		OnNotification: func(method string, params json.RawMessage) {
			if d.opts.OnNotification != nil {
				d.opts.OnNotification(name, method, params)
			}
		},
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if first {
		defer close(s.ready)
	}
	if err != nil {
		if s.state != StateUnhealthy {
			s.since = time.Now()
		}
		s.state, s.err, s.retry = StateUnhealthy, err, time.Now().Add(nextWait)
		d.log.Error("backend failed to start", "backend", name, "err", err, "retry_in", nextWait)
		return false
	}
	s.state, s.conn, s.err, s.since = StateHealthy, conn, nil, time.Now()
	d.log.Info("backend connected", "backend", name, "protocol", conn.ProtocolVersion(), "took", time.Since(start).Round(time.Millisecond))
	return true
}

// CallTool validates args against the tool's recorded schema and calls it
// on its backend with the backend's timeout.
func (d *Dispatcher) CallTool(ctx context.Context, backendName, tool string, args json.RawMessage) (*toolcall.Result, error) {
	id := backendName + "." + tool
	t, err := d.reg.Resolve(id)
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
	conn, timeout, err := d.conn(backendName, tool)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := conn.CallTool(cctx, tool, args)
	switch {
	case err == nil:
		if !res.IsError && d.opts.OnCall != nil {
			d.opts.OnCall(id)
		}
		return res, nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, &Error{Code: CodeTimeout, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s did not answer before the caller's deadline (the call_tool_chain timeout); pass a larger timeout or split the work", id)}
	case ctx.Err() != nil:
		return nil, &Error{Code: CodeCanceled, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s was canceled by the client before %s answered", id, backendName)}
	case errors.Is(err, context.DeadlineExceeded):
		return nil, &Error{Code: CodeTimeout, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s did not answer within %s (backend %q call timeout); retry with a smaller request or raise backends.%s.timeout", id, timeout, backendName, backendName)}
	default:
		return nil, &Error{Code: CodeBackend, Backend: backendName, Tool: tool, Err: err,
			Message: fmt.Sprintf("%s failed: %v\nRead kiln://backend/%s for the backend's state.", id, err, backendName)}
	}
}

// conn returns the live connection and the backend's call timeout, or an
// error saying why there is no connection and what the caller can do.
func (d *Dispatcher) conn(name, tool string) (*backend.Conn, time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.slots[name]
	if !ok {
		return nil, 0, &Error{Code: CodeNotConfigured, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is compiled into kiln but not declared in its config; add backends.%s to %s to use it", name, name, d.cfg.EditHint())}
	}
	switch s.state {
	case StateHealthy:
		return s.conn, cmp.Or(s.cfg.Timeout, d.cfg.Gateway.CallTimeout), nil
	case StateStarting:
		return nil, 0, &Error{Code: CodeStarting, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is still starting, retry in a moment; tool %s.%s is known but its backend has not connected yet", name, name, tool)}
	case StateDisabled:
		return nil, 0, &Error{Code: CodeUnavailable, Backend: name, Tool: tool,
			Message: fmt.Sprintf("backend %q is disabled (backends.%s.enabled: false)", name, name)}
	default:
		msg := fmt.Sprintf("backend %q is %s since %s", name, s.state, s.since.Format(time.RFC3339))
		if s.err != nil {
			msg += ": " + firstLines(s.err.Error(), 8)
		}
		if !s.retry.IsZero() {
			msg += fmt.Sprintf("\nkiln retries connecting at %s; try again after that.", s.retry.Format(time.RFC3339))
		}
		return nil, 0, &Error{Code: CodeUnavailable, Backend: name, Tool: tool, Err: s.err,
			Message: msg + fmt.Sprintf("\nRead kiln://backend/%s for details.", name)}
	}
}

// Status reports every configured backend, sorted by name.
func (d *Dispatcher) Status() []Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Status, 0, len(d.slots))
	for _, b := range d.cfg.Backends {
		s := d.slots[b.Name]
		st := Status{Name: b.Name, Transport: b.Transport, State: s.state, Since: s.since}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		if s.conn != nil {
			st.ProtocolVersion = s.conn.ProtocolVersion()
			st.StderrTail = s.conn.StderrTail(20)
		}
		out = append(out, st)
	}
	return out
}

// Close stops every backend connection and waits for pending connects.
func (d *Dispatcher) Close() error {
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, s := range d.slots {
		if s.conn != nil {
			if err := s.conn.Close(); err != nil {
				errs = append(errs, err)
			}
			s.conn = nil
		}
		s.state = StateStopped
	}
	return errors.Join(errs...)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
