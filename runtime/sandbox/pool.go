package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Per-worker memory beyond the script's budget, measured on Linux amd64
// with Go 1.26 and kiln's generated preamble: an idle worker (runtime,
// esbuild, goja, one prepared runtime) maps about 1.25 GiB of address
// space, almost all of it PROT_NONE reservations, about 80 MiB of it
// writable (VmData), and has about 22 MiB resident.
const (
	// dataSlack is added to a worker's measured data size and the budget
	// for RLIMIT_DATA, the limit that binds: a program holding 30 MiB of
	// strings grew VmData by 40–50 MiB (the collector's headroom).
	dataSlack = 64 << 20
	// rlimitSlack is added to a worker's measured address space and the
	// budget for RLIMIT_AS, a backstop: the Go heap reserves address space
	// in 64 MiB arenas, and with 96 MiB a program using 20 MiB of its
	// 50 MiB budget was already refused an arena.
	rlimitSlack = 256 << 20
	// cgroupOverhead is added to the budget for memory.max: the idle
	// worker's resident memory with room to spare.
	cgroupOverhead = 64 << 20
	// killGrace is how long past its deadline a run may take before the
	// host kills its worker. The worker itself stops a run at the deadline
	// and gives up on native code 100 ms later.
	killGrace = 500 * time.Millisecond
	// startTimeout bounds a worker's start up to its ready frame.
	startTimeout = 30 * time.Second
)

// errClosed is a worker start refused because the pool closed.
var errClosed = errors.New("the sandbox is shutting down")

// WorkerOptions configure NewPool.
type WorkerOptions struct {
	// Command returns a new, unstarted command that runs ServeWorker:
	// `kiln sandbox-worker`. The pool sets its stdio and process
	// attributes.
	Command func() *exec.Cmd
}

// Pool runs scripts in worker processes, one script per worker at a
// time, so a script's memory and CPU are bounded by the kernel (cgroup v2
// memory.max where kiln may create cgroups, RLIMIT_DATA and RLIMIT_AS
// otherwise) and a
// script that passes its budget or deadline costs only its worker, which
// is killed and replaced. It has the Run and Limits methods of Sandbox.
//
// Lifecycle: NewPool (starts the first worker in the background) →
// Ready (optional: waits for it, and reports a setup that cannot start a
// worker) → Run from any number of goroutines (the first waits for the
// first worker) → Close (kills the workers).
type Pool struct {
	opts Options
	lim  Limits
	log  *slog.Logger
	cmd  func() *exec.Cmd
	cg   *cgroupParent
	init *workerInit
	// Mechanism names how worker memory is bounded, for the start log.
	mechanism string

	slots chan struct{}
	idle  chan *worker

	mu   sync.Mutex
	live int // workers started or starting, at most MaxConcurrent
	seq  int
	// retired counts workers killed for their run's limits or death.
	retired int
	closed  bool
	all     map[*worker]struct{}
	// wake is closed (and replaced) when a worker leaves, so a run waiting
	// for one may start another.
	wake chan struct{}

	// first is closed once the first worker is idle or failed to start;
	// firstErr is then set when it failed.
	first    chan struct{}
	firstErr error
}

// NewPool returns a pool that grows to Limits.MaxConcurrent workers on
// demand. The first worker starts in the background: starting it (a
// process that loads the runtime and compiles the preamble) took most of
// kiln's time to its first answer (BenchmarkColdStart), and discovery
// needs no worker.
func NewPool(opts Options, wo WorkerOptions) (*Pool, error) {
	if opts.Caller == nil {
		return nil, errors.New("sandbox: a Caller is required")
	}
	if wo.Command == nil {
		return nil, errors.New("sandbox: a worker Command is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim := opts.Limits.withDefaults()
	p := &Pool{
		opts: opts, lim: lim, log: log, cmd: wo.Command,
		slots: make(chan struct{}, lim.MaxConcurrent),
		idle:  make(chan *worker, lim.MaxConcurrent),
		all:   map[*worker]struct{}{},
		wake:  make(chan struct{}),
		init:  &workerInit{Preamble: opts.Preamble, Bindings: opts.Bindings, Limits: lim, SoftLimit: true},
	}
	cg, cgErr := findCgroup()
	switch {
	case cgErr == nil:
		p.cg = cg
		p.mechanism = fmt.Sprintf("cgroup v2 memory.max of %d MiB per worker (budget + %d MiB) under %s", (lim.Memory+cgroupOverhead)>>20, cgroupOverhead>>20, cg.dir)
	case rlimitSupported:
		p.init.DataSlack = dataSlack + raceSlack + threadSlack
		p.init.RlimitSlack = rlimitSlack + raceSlack + threadSlack
		p.mechanism = fmt.Sprintf("RLIMIT_DATA of each worker's idle data size + %d MiB budget + %d MiB, RLIMIT_AS of its idle address space + budget + %d MiB (no cgroup v2: %v)",
			lim.Memory>>20, p.init.DataSlack>>20, p.init.RlimitSlack>>20, cgErr)
	default:
		p.mechanism = "none: this OS has no cgroup v2 and does not enforce RLIMIT_AS; the heap watchdog and debug.SetMemoryLimit in each worker remain"
	}
	p.live = 1
	p.first = make(chan struct{})
	go p.startFirst()
	return p, nil
}

func (p *Pool) startFirst() {
	defer close(p.first)
	w, err := p.startWorker()
	if err != nil {
		p.firstErr = fmt.Errorf("sandbox: start a worker process: %w", err)
		if errors.Is(err, errClosed) {
			p.gone()
			return
		}
		p.log.Error("sandbox: the first worker process could not start; call_tool_chain programs fail until a worker starts", "err", err)
		p.gone()
		return
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		// Close ran while the worker started and did not see it.
		p.retire(w)
		<-w.exited
		return
	}
	p.idle <- w
	p.log.Info("sandbox runs in worker processes", "memory_limit", p.mechanism,
		"max_workers", p.lim.MaxConcurrent, "worker_vsz_mib", w.vsz>>20, "worker_rlimit_as_mib", w.rlimit>>20,
		"worker_data_mib", w.data>>20, "worker_rlimit_data_mib", w.rlimitData>>20)
}

// Ready waits until the first worker has started and returns the error
// that stopped it, naming the command, or nil; ctx bounds the wait.
func (p *Pool) Ready(ctx context.Context) error {
	select {
	case <-p.first:
		return p.firstErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Limits returns the effective limits, defaults filled in.
func (p *Pool) Limits() Limits { return p.lim }

// Mechanism says how worker memory is bounded.
func (p *Pool) Mechanism() string { return p.mechanism }

// Close kills every worker. Runs still in flight fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	// No worker process outlives Close, the first one included.
	<-p.first
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
		<-w.exited
		if w.cg != nil {
			w.cg.remove()
		}
	}
	return nil
}

// Run executes code in a worker. Script failures come back as an Outcome
// with IsError set; the error return is for ErrBusy and canceled contexts
// before start, as with Sandbox.Run.
func (p *Pool) Run(ctx context.Context, code string, opts RunOptions) (*Outcome, error) {
	start := time.Now()
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = p.lim.Timeout
	}
	timeout = min(timeout, p.lim.MaxTimeout)
	if err := acquireSlot(ctx, p.slots, p.lim); err != nil {
		return nil, err
	}
	defer func() { <-p.slots }()
	w, err := p.take(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: waiting for a worker: %w", context.Cause(ctx))
		}
		return p.internal(start, "start a worker process", err), nil
	}
	p.spare()
	out, keep := p.runOn(ctx, w, code, opts, timeout)
	if keep {
		p.idle <- w
	} else {
		p.retire(w)
		p.spare()
	}
	out.Duration = time.Since(start)
	p.log.Debug("sandbox run", "duration", out.Duration, "calls", out.Calls, "error", out.Cause, "worker", w.id)
	return out, nil
}

// take returns an idle worker, or starts one when fewer than
// MaxConcurrent live. The caller holds a slot, so one is always idle,
// starting, or may be started.
func (p *Pool) take(ctx context.Context) (*worker, error) {
	// The first worker is on its way: wait for it rather than start a
	// second one beside it. When it failed, the loop tries again.
	select {
	case <-p.first:
	default:
		select {
		case <-p.first:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		select {
		case w := <-p.idle:
			if w.alive() {
				return w, nil
			}
			p.retire(w)
			continue
		default:
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errClosed
		}
		if p.live < p.lim.MaxConcurrent {
			p.live++
			p.mu.Unlock()
			w, err := p.startWorker()
			if err != nil {
				p.gone()
				return nil, err
			}
			return w, nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case w := <-p.idle:
			if w.alive() {
				return w, nil
			}
			p.retire(w)
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// spare starts a worker in the background when none is idle, so the
// next run finds one warm.
func (p *Pool) spare() {
	p.mu.Lock()
	if p.closed || p.live >= p.lim.MaxConcurrent || len(p.idle) > 0 {
		p.mu.Unlock()
		return
	}
	p.live++
	p.mu.Unlock()
	go func() {
		w, err := p.startWorker()
		if err != nil {
			if !errors.Is(err, errClosed) {
				p.log.Error("sandbox: start a spare worker process", "err", err)
			}
			p.gone()
			return
		}
		p.idle <- w
	}()
}

// gone records that a worker left (or never started) and wakes waiters.
func (p *Pool) gone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live--
	close(p.wake)
	p.wake = make(chan struct{})
}

// retire kills a worker and forgets it once it has exited.
func (p *Pool) retire(w *worker) {
	w.kill()
	p.mu.Lock()
	p.retired++
	p.mu.Unlock()
	p.gone()
	go func() {
		<-w.exited
		if w.cg != nil {
			w.cg.remove()
		}
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
	}()
}

// internal reports a pool failure without its details, which go to the
// log under a reference the model can quote.
func (p *Pool) internal(start time.Time, what string, err error) *Outcome {
	ref := fmt.Sprintf("sbx-%x", time.Now().UnixNano()&0xffffffff)
	p.log.Error("sandbox failure", "ref", ref, "what", what, "err", err)
	out := errorOutcome(fmt.Sprintf("the sandbox failed to %s (ref %s); this is a gateway problem, not your script", what, ref), ErrInternal, nil, 0)
	out.Cause = fmt.Errorf("%w: %s: %w", ErrInternal, what, err)
	out.Duration = time.Since(start)
	return out
}

// acquireSlot takes one of MaxConcurrent run slots, waiting QueueWait.
func acquireSlot(ctx context.Context, slots chan struct{}, lim Limits) error {
	select {
	case slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(lim.QueueWait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sandbox: waiting for a run slot: %w", context.Cause(ctx))
	case <-t.C:
		return fmt.Errorf("%w: %d scripts are already running and none finished within %v; retry shortly or use a direct tool call",
			ErrBusy, lim.MaxConcurrent, lim.QueueWait)
	}
}

func (p *Pool) workerName(id int) string { return fmt.Sprintf("kiln-%d-w%d", os.Getpid(), id) }
