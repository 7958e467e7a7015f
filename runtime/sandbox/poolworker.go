package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kilnmcp/kiln/runtime/rawio"
	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// worker is the host's handle on one worker process.
type worker struct {
	id     int
	cmd    *exec.Cmd
	stdin  *os.File
	fw     *frameWriter
	frames chan *frame // closed when the worker's stdout ends
	exited chan struct{}
	stderr *tailBuffer
	cg     *cgroupChild
	killed atomic.Bool
	// From the ready frame.
	vsz, rlimit, data, rlimitData int64
	// lastExtra is the extra preamble of the worker's last run, which its
	// cache of compiled extra preambles holds with its bindings: the same
	// text is sent again without them. Only the run holding w uses it.
	lastExtra string
}

// startWorker starts a process, sends it the init frame and waits for
// ready. The caller has counted it in p.live.
func (p *Pool) startWorker() (*worker, error) {
	p.mu.Lock()
	p.seq++
	id := p.seq
	p.mu.Unlock()
	var cg *cgroupChild
	if p.cg != nil {
		var err error
		if cg, err = p.cg.newChild(p.workerName(id), p.lim.Memory+cgroupOverhead); err != nil {
			return nil, fmt.Errorf("create the worker's cgroup: %w", err)
		}
	}
	w, err := p.spawn(id, cg)
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		return nil, err
	}
	return w, nil
}

func (p *Pool) spawn(id int, cg *cgroupChild) (*worker, error) {
	cmd := p.cmd()
	workerSysProcAttr(cmd, cg)
	// Plain pipes rather than cmd.StdoutPipe: Wait would close that one
	// under the reader.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	w := &worker{id: id, cmd: cmd, stdin: inW, fw: &frameWriter{w: rawio.OrFile(inW)}, frames: make(chan *frame, 16),
		exited: make(chan struct{}), stderr: &tailBuffer{max: 4 << 10, record: func(line string) {
			p.log.Warn("sandbox worker says", "worker", id, "record", line)
		}}, cg: cg}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, w.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("run %s: %w", strings.Join(cmd.Args, " "), err)
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.all[w] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		// Close has killed the workers it knew of; a spare started beside
		// a run would otherwise idle until kiln exits.
		_ = cmd.Process.Kill()
		inW.Close()
		_ = cmd.Wait()
		outR.Close()
		return nil, errClosed
	}
	go func() {
		defer close(w.frames)
		defer outR.Close()
		br := bufio.NewReaderSize(rawio.OrFile(outR), 64<<10)
		for {
			f, err := readFrame(br)
			if err != nil {
				return
			}
			w.frames <- f
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	fail := func(err error) (*worker, error) {
		w.kill()
		<-w.exited
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
		if tail := w.stderr.String(); tail != "" {
			err = fmt.Errorf("%w; its stderr ends: %s", err, tail)
		}
		return nil, err
	}
	if err := w.fw.write(&frame{T: frameInit, Init: p.init}); err != nil {
		return fail(fmt.Errorf("send the init frame: %w", err))
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case f, ok := <-w.frames:
		switch {
		case !ok:
			<-w.exited
			return fail(fmt.Errorf("the worker exited during start (%v)", w.cmd.ProcessState))
		case f.T != frameReady:
			return fail(fmt.Errorf("the worker answered %q instead of ready", f.T))
		case f.Err != "":
			return fail(fmt.Errorf("the worker could not prepare the sandbox: %s", f.Err))
		}
		w.vsz, w.rlimit, w.data, w.rlimitData = f.VSZ, f.Rlimit, f.Data, f.RlimitData
		return w, nil
	case <-t.C:
		return fail(fmt.Errorf("the worker did not become ready within %v", startTimeout))
	}
}

func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return !w.killed.Load()
	}
}

func (w *worker) kill() {
	w.killed.Store(true)
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
	_ = w.stdin.Close()
}

// runOn runs one script on w and reports whether w may serve another.
func (p *Pool) runOn(ctx context.Context, w *worker, code string, opts RunOptions, timeout time.Duration) (*Outcome, bool) {
	// Tool calls live until the run ends, or the worker gives up on them
	// (it drops them at its deadline, which must come first so the script
	// sees a timeout, not a failed call). A client's cancel reaches them
	// only after the worker was told, for the same reason.
	callCtx, cancelCalls := context.WithTimeoutCause(context.WithoutCancel(ctx), timeout+killGrace, ErrTimeout)
	defer cancelCalls()
	var names []string
	if p.opts.Backends != nil {
		names = p.opts.Backends()
	}
	run := &frame{T: frameRun, Run: &workerRun{Code: code, Extra: opts.ExtraPreamble, Timeout: timeout, Backends: names}}
	if opts.ExtraPreamble != w.lastExtra {
		run.Run.ExtraBindings = opts.ExtraBindings
		w.lastExtra = opts.ExtraPreamble
	}
	if err := w.fw.write(run); err != nil {
		return p.died(w, timeout, 0, 0), false
	}
	hard := time.NewTimer(timeout + killGrace)
	defer hard.Stop()
	var (
		canceled <-chan time.Time
		done     = ctx.Done()
		calls    = map[int64]context.CancelFunc{}
		started  int
		pending  atomic.Int32
	)
	defer func() {
		for _, c := range calls {
			c()
		}
	}()
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return p.died(w, timeout, started, int(pending.Load())), false
			}
			switch f.T {
			case frameCall:
				started++
				cctx, cancel := context.WithCancel(callCtx)
				calls[f.ID] = cancel
				pending.Add(1)
				go func(f *frame) {
					defer pending.Add(-1)
					res, err := p.call(cctx, f)
					cancel()
					reply := &frame{T: frameResult, ID: f.ID, Result: res}
					if err != nil {
						reply.Result, reply.Err = nil, err.Error()
					}
					_ = w.fw.write(reply)
				}(f)
			case frameDrop:
				if c := calls[f.ID]; c != nil {
					c()
					delete(calls, f.ID)
				}
			case frameDone:
				if f.Out == nil {
					return p.internal(time.Now(), "run the script", errors.New("the worker sent an empty outcome")), false
				}
				out := f.Out.toOutcome()
				keep := !f.Out.Dirty && !errors.Is(out.Cause, ErrTimeout) && !errors.Is(out.Cause, ErrMemory) && !errors.Is(out.Cause, ErrInternal)
				return out, keep
			}
		case <-hard.C:
			w.kill()
			msg, sentinel := stopMessage(ErrTimeout, p.lim.Memory, timeout, int(pending.Load()))
			p.log.Warn("sandbox worker killed: its run passed the deadline", "worker", w.id, "timeout", timeout)
			return errorOutcome(msg, sentinel, nil, started), false
		case <-done:
			done = nil
			_ = w.fw.write(&frame{T: frameCancel})
			cancelCalls()
			canceled = time.After(killGrace)
		case <-canceled:
			w.kill()
			msg, sentinel := stopMessage(context.Canceled, p.lim.Memory, timeout, 0)
			return errorOutcome(msg, sentinel, nil, started), false
		}
	}
}

// died explains a worker that ended during a run: the kernel's memory
// limit (cgroup OOM kill, or the Go runtime failing to map memory under
// RLIMIT_AS) or a crash.
func (p *Pool) died(w *worker, timeout time.Duration, calls, pending int) *Outcome {
	// The worker closed its stdout: it is exiting, or wedged.
	killedByHost := w.killed.Load()
	select {
	case <-w.exited:
	case <-time.After(time.Second):
		w.kill()
		<-w.exited
	}
	w.kill()
	tail := w.stderr.String()
	var sig syscall.Signal
	if st := w.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
		}
	}
	oom := (w.cg != nil && w.cg.oomKilled()) || (sig == syscall.SIGKILL && !killedByHost) || memoryCrash(tail)
	if oom {
		p.log.Warn("sandbox worker killed: its run passed the memory limit", "worker", w.id, "signal", sig, "stderr", firstLine(tail))
		msg, sentinel := stopMessage(ErrMemory, p.lim.Memory, timeout, pending)
		return errorOutcome(msg, sentinel, nil, calls)
	}
	return p.internal(time.Now(), "run the script", fmt.Errorf("worker %d exited (%v): %s", w.id, w.cmd.ProcessState, tail))
}

// memoryCrash reports whether a worker's stderr shows the Go runtime
// failing to map memory, which under RLIMIT_DATA or RLIMIT_AS is the limit at work (the
// race detector's runtime words it as an address-space collision or a
// ThreadSanitizer allocation failing with ENOMEM).
func memoryCrash(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions", "runtime: mmap", "errno: 12", "pthread_create failed"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// tailBuffer keeps the first and the last max bytes written to it: the
// Go runtime's reason for a crash comes first, and the goroutine dump after
// it can be long.
type tailBuffer struct {
	mu         sync.Mutex
	max        int
	head, tail []byte
	cut        bool
	// record, when set, receives each complete log record line (the
	// worker's slog output), so its warnings reach kiln's log.
	record  func(string)
	partial []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.record != nil {
		t.partial = append(t.partial, b...)
		for {
			i := bytes.IndexByte(t.partial, '\n')
			if i < 0 {
				break
			}
			if line := string(t.partial[:i]); strings.HasPrefix(line, "time=") {
				t.record(line)
			}
			t.partial = t.partial[i+1:]
		}
		if len(t.partial) > 64<<10 { // not a log record: a dump without newlines
			t.partial = nil
		}
	}
	n := len(b)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(b))
		t.head = append(t.head, b[:k]...)
		b = b[k:]
	}
	t.tail = append(t.tail, b...)
	if over := len(t.tail) - t.max; over > 0 {
		t.tail = append(t.tail[:0], t.tail[over:]...)
		t.cut = true
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	sep := ""
	if t.cut {
		sep = " … "
	}
	return strings.TrimSpace(string(t.head) + sep + string(t.tail))
}

// call makes one tool call a worker's script asked for. It runs on a
// goroutine of its own in kiln's process, where a panic on the call's path
// (argument validation, the backend's answer) would end kiln and every
// session with it: recovered, it is this call's error, logged with its
// stack, as an in-process run's call makes it (run.go).
func (p *Pool) call(ctx context.Context, f *frame) (res *toolcall.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			safe.Report(p.log, "the script's call of "+f.Backend+"."+f.Tool, r)
			res, err = nil, errCallPanicked
		}
	}()
	return p.opts.Caller.CallTool(ctx, f.Backend, f.Tool, f.Args)
}
