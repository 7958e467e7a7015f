package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// ServeWorker is the body of the hidden `kiln sandbox-worker` command. It
// reads an init frame from in, prepares an in-process Sandbox whose tool
// calls travel back to the host as call frames, caps its own memory as
// asked, answers ready, then runs one script per run frame until in
// closes. Its stdout (out) carries frames only; logs go to errw.
func ServeWorker(in io.Reader, out io.Writer, errw io.Writer) int {
	if err := smallThreadStacks(); err != nil {
		fmt.Fprintf(errw, "kiln sandbox-worker: lower the thread stack size: %v\n", err)
		return 1
	}
	br := bufio.NewReaderSize(in, 64<<10)
	fw := &frameWriter{w: out}
	log := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	f, err := readFrame(br)
	if err != nil || f.T != frameInit || f.Init == nil {
		fmt.Fprintf(errw, "kiln sandbox-worker: this command is started by kiln serve, not by hand (no init frame on stdin: %v)\n", err)
		return 2
	}
	wh := &workerHost{fw: fw, pending: map[int64]chan *frame{}}
	lim := f.Init.Limits
	// One run at a time: the host owns queueing and concurrency.
	lim.MaxConcurrent, lim.QueueWait, lim.WarmRuntimes = 1, time.Second, 1
	sb, err := New(Options{Preamble: f.Init.Preamble, Bindings: f.Init.Bindings, Caller: wh, Limits: lim, Logger: log, Backends: wh.backends})
	if err != nil {
		_ = fw.write(&frame{T: frameReady, Err: err.Error()})
		return 1
	}
	// A collection now makes the heap figures below, and the live heap the
	// watchdog takes as its baseline, those of the prepared worker rather
	// than of some moment during preparation: measured, a fresh worker's
	// first run was otherwise stopped at 30 of its 50 MiB.
	runtime.GC()
	if f.Init.SoftLimit {
		debug.SetMemoryLimit(goMemory() + sb.lim.Memory)
	}
	ready := &frame{T: frameReady, VSZ: vmSize(), Data: vmData()}
	if f.Init.DataSlack > 0 {
		ready.RlimitData = ready.Data + sb.lim.Memory + f.Init.DataSlack
		if err := limitData(ready.RlimitData); err != nil {
			_ = fw.write(&frame{T: frameReady, Err: "cap the data segment: " + err.Error()})
			return 1
		}
	}
	if f.Init.RlimitSlack > 0 {
		ready.Rlimit = ready.VSZ + sb.lim.Memory + f.Init.RlimitSlack
		if err := limitAddressSpace(ready.Rlimit); err != nil {
			_ = fw.write(&frame{T: frameReady, Err: "cap the address space: " + err.Error()})
			return 1
		}
	}
	if err := fw.write(ready); err != nil {
		return 1
	}
	runs := make(chan workerJob)
	go wh.read(br, runs)
	for job := range runs {
		if err := wh.serve(sb, job); err != nil {
			fmt.Fprintf(errw, "kiln sandbox-worker: %v\n", err)
			return 1
		}
	}
	return 0
}

// workerHost is the worker's side of the connection: the Caller its
// sandbox dispatches through, and the current run's cancel.
type workerHost struct {
	fw     *frameWriter
	nextID atomic.Int64
	names  atomic.Pointer[[]string]

	mu      sync.Mutex
	pending map[int64]chan *frame
	cancel  context.CancelFunc
}

func (wh *workerHost) backends() []string {
	if p := wh.names.Load(); p != nil {
		return *p
	}
	return nil
}

// read demultiplexes frames from the host until the stream ends, which
// ends the worker: the host closed stdin, or died.
func (wh *workerHost) read(br *bufio.Reader, runs chan<- workerJob) {
	defer close(runs)
	defer wh.stop()
	for {
		f, err := readFrame(br)
		if err != nil {
			return
		}
		switch f.T {
		case frameRun:
			if f.Run != nil {
				// The run's context exists before the next frame is read,
				// so a cancel right behind the run always finds it.
				ctx, cancel := context.WithCancel(context.Background())
				wh.mu.Lock()
				wh.cancel = cancel
				wh.mu.Unlock()
				runs <- workerJob{run: f.Run, ctx: ctx, cancel: cancel}
			}
		case frameResult:
			wh.mu.Lock()
			ch := wh.pending[f.ID]
			delete(wh.pending, f.ID)
			wh.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case frameCancel:
			wh.stop()
		}
	}
}

func (wh *workerHost) stop() {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if wh.cancel != nil {
		wh.cancel()
	}
}

// workerJob is a run with the context its cancel frame cancels.
type workerJob struct {
	run    *workerRun
	ctx    context.Context
	cancel context.CancelFunc
}

func (wh *workerHost) serve(sb *Sandbox, job workerJob) error {
	defer job.cancel()
	r := job.run
	names := r.Backends
	wh.names.Store(&names)
	out, err := sb.Run(job.ctx, r.Code, RunOptions{Timeout: r.Timeout, ExtraPreamble: r.Extra, ExtraBindings: r.ExtraBindings})
	if err != nil {
		out = &Outcome{Value: nullJSON, IsError: true, Error: "the run was canceled by the client", Cause: fmt.Errorf("%w: %w", ErrCanceled, err)}
		if errors.Is(err, ErrBusy) {
			out.Error, out.Cause = "the sandbox failed to start the script (its worker was still busy); this is a gateway problem, not your script", fmt.Errorf("%w: %w", ErrInternal, err)
		}
	}
	wo := fromOutcome(out)
	wo.Dirty = !sb.settled(50 * time.Millisecond)
	return wh.fw.write(&frame{T: frameDone, Out: wo})
}

// CallTool sends the call to the host, which dispatches it with its own
// Caller, and waits for the answer or the run's end.
func (wh *workerHost) CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	id := wh.nextID.Add(1)
	ch := make(chan *frame, 1)
	wh.mu.Lock()
	wh.pending[id] = ch
	wh.mu.Unlock()
	if err := wh.fw.write(&frame{T: frameCall, ID: id, Backend: backend, Tool: tool, Args: args}); err != nil {
		wh.forget(id)
		return nil, err
	}
	select {
	case f := <-ch:
		if f.Err != "" {
			return nil, errors.New(f.Err)
		}
		return f.Result, nil
	case <-ctx.Done():
		wh.forget(id)
		_ = wh.fw.write(&frame{T: frameDrop, ID: id})
		return nil, ctx.Err()
	}
}

func (wh *workerHost) forget(id int64) {
	wh.mu.Lock()
	delete(wh.pending, id)
	wh.mu.Unlock()
}

// settled reports whether the last run's goroutine ended within wait: a
// run abandoned in native code keeps its slot.
func (s *Sandbox) settled(wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		<-s.slots
		return true
	case <-t.C:
		return false
	}
}

// goMemory is all memory the Go runtime has mapped for this process.
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
