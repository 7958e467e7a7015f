package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Sentinels carried by Outcome.Cause (and ErrBusy, returned by Run).
var (
	// ErrBusy: every run slot stayed taken for Limits.QueueWait.
	ErrBusy = errors.New("sandbox busy")
	// ErrSyntax: the code does not parse, or is refused before running.
	ErrSyntax = errors.New("script does not compile")
	// ErrThrown: the script threw, or left a rejection unhandled.
	ErrThrown = errors.New("script threw")
	// ErrTimeout: the run passed its deadline.
	ErrTimeout = errors.New("script timed out")
	// ErrMemory: the run passed its heap budget.
	ErrMemory = errors.New("script exceeded its memory budget")
	// ErrStalled: the script awaits a promise nothing can settle.
	ErrStalled = errors.New("script stalled")
	// ErrResult: the return value cannot be sent back as JSON.
	ErrResult = errors.New("script result cannot be returned")
	// ErrCanceled: the caller canceled the run.
	ErrCanceled = errors.New("script canceled")
	// ErrInternal: the engine failed; the message has a log reference.
	ErrInternal = errors.New("sandbox failure")
)

// Limits bound each run. Zero fields take the defaults shown; those of
// the first six are gateway.sandbox's in kiln.yaml, declared once by the
// config (config.SandboxDefaults).
type Limits struct {
	// Timeout applies when RunOptions.Timeout is zero (30s); MaxTimeout
	// caps what a caller may ask for (5m), and is at least Timeout.
	Timeout, MaxTimeout time.Duration
	// Memory is the heap budget per run in bytes (50 MiB).
	Memory int64
	// MaxCalls caps backend tool calls per run (50).
	MaxCalls int
	// MaxConcurrent caps simultaneous runs (8); QueueWait is how long Run
	// waits for a slot before failing with ErrBusy (2s).
	MaxConcurrent int
	QueueWait     time.Duration
	// MaxLogBytes bounds captured console output per run (64 KiB).
	MaxLogBytes int
	// MaxCodeBytes bounds the submitted code (256 KiB); MaxNesting bounds
	// its syntactic nesting as estimated by the pre-scan (1000).
	MaxCodeBytes, MaxNesting int
	// MaxCallStack is goja's call-stack limit in frames (2000).
	MaxCallStack int
	// MaxString (characters) and MaxArray (elements) cap what one capped
	// builtin may produce; they default to Memory/4 and Memory/32 (a goja
	// array slot alone is 16 bytes).
	MaxString, MaxArray int
	// MaxResultBytes bounds the JSON of the return value and MaxArgBytes
	// the JSON of one tool call's arguments (both 8 MiB).
	MaxResultBytes, MaxArgBytes int
	// RegexpTimeout bounds one regular-expression match (1s). It is
	// process-wide: the first New sets it for every sandbox.
	RegexpTimeout time.Duration
	// WarmRuntimes is how many hardened runtimes with the preamble loaded
	// are kept ready (2); -1 disables the pool.
	WarmRuntimes int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	cfg := config.SandboxDefaults()
	defDur(&l.Timeout, cfg.Timeout)
	defDur(&l.MaxTimeout, cfg.MaxTimeout)
	l.MaxTimeout = max(l.MaxTimeout, l.Timeout)
	if l.Memory <= 0 {
		l.Memory = cfg.MemoryBytes
	}
	def(&l.MaxCalls, cfg.MaxCalls)
	def(&l.MaxConcurrent, cfg.MaxConcurrent)
	defDur(&l.QueueWait, cfg.QueueWait)
	def(&l.MaxLogBytes, 64<<10)
	def(&l.MaxCodeBytes, 256<<10)
	def(&l.MaxNesting, 1000)
	def(&l.MaxCallStack, 2000)
	def(&l.MaxString, int(l.Memory/4))
	def(&l.MaxArray, int(l.Memory/32))
	def(&l.MaxResultBytes, 8<<20)
	def(&l.MaxArgBytes, 8<<20)
	defDur(&l.RegexpTimeout, time.Second)
	if l.WarmRuntimes == 0 {
		l.WarmRuntimes = 2
	}
	l.WarmRuntimes = max(l.WarmRuntimes, 0)
	return l
}

// Options configure a Sandbox.
type Options struct {
	// Preamble is the bridge preamble generated at emit time, and Bindings
	// what it binds (bridge.Lookup(backends).Bindings() of the backends it
	// was built from): error hints name backends and tools from them
	// without running the preamble. Without Bindings, hints name none.
	Preamble string
	Bindings []bridge.Binding
	// Caller dispatches backend tool calls.
	Caller toolcall.Caller
	Limits Limits
	// Logger receives one debug record per run and warnings for kills;
	// nil discards.
	Logger *slog.Logger
	// Backends returns the configured backend names, including those whose
	// tools are not in the bridge right now; error hints use it to tell a
	// misspelling from a backend that is down. Optional.
	Backends func() []string
}

// RunOptions configure one Run.
type RunOptions struct {
	// Timeout bounds the run; zero means Limits.Timeout, and values above
	// Limits.MaxTimeout are capped.
	Timeout time.Duration
	// ExtraPreamble binds backends registered at run time (register_manual);
	// it runs after the compiled preamble. Compiled programs are cached by
	// content. ExtraBindings is what it binds, as Options.Bindings.
	ExtraPreamble string
	ExtraBindings []bridge.Binding
}

// Outcome is the result of one run.
type Outcome struct {
	// Value is the script's return value as JSON; undefined becomes null.
	Value json.RawMessage
	// Logs holds console output, one entry per call, warn/error/debug
	// prefixed with their level.
	Logs []string
	// Calls counts backend tool calls started.
	Calls int
	// Refused counts tool calls refused because the run had made MaxCalls
	// already; the script may have caught the error and gone on, so this is
	// the only trace the limit leaves for metrics.
	Refused int
	// IsError reports a failed run; Error says what went wrong for a model:
	// message, the script's stack in its own line numbers, and a hint.
	IsError bool
	Error   string
	// Cause wraps one of the sentinels above when IsError is set.
	Cause    error
	Duration time.Duration
}

// Sandbox runs scripts. It is safe for concurrent use.
type Sandbox struct {
	opts     Options
	lim      Limits
	log      *slog.Logger
	preamble *preamble
	// hostGlobals are the hardened runtime's globals before the preamble
	// runs: the preamble never binds a backend's original name over one.
	hostGlobals map[string]bool
	extras      *programCache[*preamble]
	programs    *programCache[*unit]
	slots       chan struct{}
	watch       *watchdog
	// warm holds prepared runtimes; refilling counts preparations under way.
	warm      chan *prepared
	refilling atomic.Int32
}

var regexpOnce sync.Once

// New compiles the hardening script and the preamble and returns a sandbox.
func New(opts Options) (*Sandbox, error) {
	if opts.Caller == nil {
		return nil, errors.New("sandbox: a Caller is required")
	}
	lim := opts.Limits.withDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// goja compiles patterns that RE2 cannot run with regexp2, which reads
	// this variable when compiling; it has no per-pattern hook.
	regexpOnce.Do(func() { regexp2.DefaultMatchTimeout = lim.RegexpTimeout })
	pre, err := compilePreamble("preamble.js", opts.Preamble, opts.Bindings)
	if err != nil {
		return nil, fmt.Errorf("sandbox: preamble: %w", err)
	}
	s := &Sandbox{
		opts:     opts,
		lim:      lim,
		log:      log,
		preamble: pre,
		extras:   newProgramCache[*preamble](8),
		programs: newProgramCache[*unit](256),
		slots:    make(chan struct{}, lim.MaxConcurrent),
		watch:    newWatchdog(uint64(lim.Memory), log),
		warm:     make(chan *prepared, lim.WarmRuntimes),
	}
	// A failure here (the preamble throws) should fail New, not every Run.
	p, err := s.harden()
	if err == nil {
		s.hostGlobals = globalNames(p.rt)
		err = s.loadPreamble(p)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	select {
	case s.warm <- p:
	default:
	}
	for range cap(s.warm) - 1 {
		s.refill()
	}
	return s, nil
}

// Limits returns the effective limits, defaults filled in.
func (s *Sandbox) Limits() Limits { return s.lim }

// abandonGrace is how long Run waits, after the deadline, for the run's
// goroutine to report: an interrupt normally lands within microseconds,
// but native code runs to completion first.
const abandonGrace = 100 * time.Millisecond

// Run executes code. Script failures come back as an Outcome with IsError
// set; the error return is for ErrBusy and canceled contexts before start.
func (s *Sandbox) Run(ctx context.Context, code string, opts RunOptions) (*Outcome, error) {
	start := time.Now()
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = s.lim.Timeout
	}
	timeout = min(timeout, s.lim.MaxTimeout)

	u, fail := s.compile(code)
	if fail != nil {
		fail.Duration = time.Since(start)
		return fail, nil
	}
	extra, err := s.extraPreamble(opts.ExtraPreamble, opts.ExtraBindings)
	if err != nil {
		return s.internal(start, "compile the dynamic preamble", err), nil
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	tctx, tcancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	rctx, rcancel := context.WithCancelCause(tctx)
	r := &run{sb: s, ctx: rctx, kill: rcancel, unit: u, extra: extra, timeout: timeout}
	done := make(chan *Outcome, 1)
	go func() {
		// The slot is released only when the goroutine ends, so runs stuck
		// in native code keep counting against MaxConcurrent.
		defer s.release()
		defer tcancel()
		defer rcancel(nil)
		done <- r.execute()
		s.refill()
	}()
	var out *Outcome
	select {
	case out = <-done:
	case <-rctx.Done():
		select {
		case out = <-done:
		case <-time.After(abandonGrace):
			out = r.abandoned()
			s.log.Warn("sandbox run did not stop at its deadline; its slot stays taken until it does",
				"cause", context.Cause(rctx), "timeout", timeout)
		}
	}
	out.Duration = time.Since(start)
	s.log.Debug("sandbox run", "duration", out.Duration, "calls", out.Calls, "error", out.Cause)
	return out, nil
}

func (s *Sandbox) acquire(ctx context.Context) error { return acquireSlot(ctx, s.slots, s.lim) }

func (s *Sandbox) release() { <-s.slots }

// internal reports an engine failure without its details, which go to the
// log under a reference the model can quote.
func (s *Sandbox) internal(start time.Time, what string, err error) *Outcome {
	ref := fmt.Sprintf("sbx-%x", time.Now().UnixNano()&0xffffffff)
	s.log.Error("sandbox failure", "ref", ref, "what", what, "err", err)
	return &Outcome{
		Value:    json.RawMessage("null"),
		IsError:  true,
		Error:    fmt.Sprintf("the sandbox failed to %s (ref %s); this is a gateway problem, not your script", what, ref),
		Cause:    fmt.Errorf("%w: %s: %w", ErrInternal, what, err),
		Duration: time.Since(start),
	}
}
