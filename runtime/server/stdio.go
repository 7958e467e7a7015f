package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"
)

// stdioMaxCalls bounds the requests the read loop serves at once (tools/call
// and the others in loopServes); past it the read loop waits for one to
// finish, as mcp-go's own queue did (32 workers and 100 queued).
const stdioMaxCalls = 132

// ServeStdio serves one client over in/out until ctx ends, in closes or a
// write to out fails (that error is returned).
//
// kiln reads stdin itself: mcp-go's stdio server decodes every line five
// times (a validity pass, three probes for responses to its own requests
// and a method probe) and reads each line on a goroutine of its own, which
// cost a tools/call about as much as the call itself (BenchmarkEchoHop).
// The read loop scans each line once (checkEnvelope's scan, which also
// finds the method) and serves tools/call requests (and the few others in
// loopServes) straight through the MCP server's HandleMessage; every other
// line (initialize, notifications, cancellation, the client's answers to
// sampling, elicitation and roots requests) goes to mcp-go's stdio server
// unchanged, through a pipe, in the order it came. As with mcp-go alone, a tools/call does not wait for
// the lines before it to be handled: requests run concurrently, and the
// notifications kiln handles start their work in the background.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	// The SDK's default of 5 workers lets five slow requests block every
	// other request, discovery included.
	server.WithWorkerPoolSize(32)(std)
	std.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelError))
	// The SDK hands its context, which carries the registered stdio
	// session, to the context function once before it reads anything.
	session := make(chan context.Context, 1)
	std.SetContextFunc(func(ctx context.Context) context.Context {
		session <- ctx
		return ctx
	})
	sw := newSyncWriter(out)
	lw := &lineWriter{w: sw, patch: s.patchOut}
	pr, pw := io.Pipe()
	listened := make(chan error, 1)
	go func() {
		err := std.Listen(ctx, pr, lw)
		// Lines written after the SDK stopped reading fail instead of
		// blocking the read loop.
		pr.CloseWithError(errListenEnded)
		listened <- err
	}()
	var sctx context.Context
	select {
	case sctx = <-session:
	case err := <-listened:
		return err
	}
	callCtx, cancelCalls := context.WithCancel(sctx)
	loop := s.runStdioLoop(callCtx, in, lw, pw)
	var readErr error
	select {
	case readErr = <-loop.read:
	case <-sw.failed:
		// The client stopped reading (it went away, or closed its end of
		// stdout): nothing more reaches it, so the session is over. kiln
		// writes its stdout raw (package rawio), so a broken pipe is an
		// error here, not the SIGPIPE that os.Stdout's writes raise.
		readErr = fmt.Errorf("write to the client: %w", sw.failure())
	case <-ctx.Done():
		// A read blocked on stdin cannot be interrupted; like the SDK,
		// kiln stops waiting for it.
		readErr = ctx.Err()
	}
	// As the SDK does at end of input: calls still running are canceled,
	// and ServeStdio returns once they have answered.
	cancelCalls()
	loop.stop()
	pw.Close()
	err := <-listened
	if err == nil && readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, errListenEnded) {
		return readErr
	}
	return err
}

var errListenEnded = errors.New("stdio server stopped")

// loopServes are the methods (as raw JSON strings) whose requests the read
// loop serves itself rather than the SDK's stdio server: tools/call for
// speed; prompts/get, resources/read and completion/complete so a backend's
// JSON-RPC error reaches the client with its own code (the loop answers
// with the relayed error, relay.go; through the SDK's server it became
// -32603).
var loopServes = map[string]bool{
	`"tools/call"`: true, `"prompts/get"`: true, `"resources/read"`: true, `"completion/complete"`: true,
}

// announced are the methods (as raw JSON strings) of the requests the read
// loop announces to pendingSubs before passing them to the SDK.
var announced = map[string]bool{`"resources/subscribe"`: true, `"resources/unsubscribe"`: true}

// stdioLoop reads stdin on a pool of workers, one reading at a time: the
// worker that reads a tools/call hands the reading to another worker and
// serves the call itself, so no call waits for a goroutine to wake (the
// hand-off to the next reader happens while the call runs).
type stdioLoop struct {
	s     *Server
	in    *bufio.Reader // read by one worker at a time
	out   io.Writer     // whole lines, shared with the SDK
	sdk   io.Writer     // the SDK's stdin
	slots chan struct{}
	// work hands a task (reading, or reading then one call) to an idle
	// worker. Workers live as long as the loop: a goroutine per call grew
	// a fresh stack through the decoders on every call (runtime.copystack
	// was 6% of a tier-1 call's CPU).
	work chan func()
	// read gets why reading ended: the end of stdin or a failed write.
	read chan error

	mu       sync.Mutex // orders starting tasks with stop and each other
	stopped  bool
	nworkers int            // workers started; under mu
	busy     atomic.Int32   // workers given a task that is not done
	calls    sync.WaitGroup // calls in flight
	inflight inflight       // their cancel functions, by id
}

// runStdioLoop starts reading in on a worker: tools/call lines are served
// and answered on out, every other line goes to sdk. Reading ends (loop.read)
// with in or ctx.
func (s *Server) runStdioLoop(ctx context.Context, in io.Reader, out, sdk io.Writer) *stdioLoop {
	l := &stdioLoop{s: s, in: bufio.NewReader(in), out: out, sdk: sdk, slots: make(chan struct{}, stdioMaxCalls),
		work: make(chan func()), read: make(chan error, 1)}
	l.mu.Lock()
	l.startRead(ctx)
	l.mu.Unlock()
	return l
}

// stop waits for the calls in flight and refuses new ones. The worker
// reading, when stdin has not ended, is left blocked in its read (as the
// SDK leaves its reader); the others end.
func (l *stdioLoop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.calls.Wait()
	close(l.work)
}

// start runs f on an idle worker, or on a new one when every worker is
// busy; the caller holds mu, and the slots bound the calls to
// stdioMaxCalls. A worker stays busy until its answer is written, so an
// idle one is always waiting on work or about to: the hand-off never
// waits behind a write to a client slow to read.
func (l *stdioLoop) start(f func()) {
	if l.nworkers > int(l.busy.Add(1))-1 {
		l.work <- f // a worker is idle or on its way back
		return
	}
	l.nworkers++
	go func() {
		for ; f != nil; f = <-l.work {
			f()
		}
	}()
}

// startRead gives the reading to a worker; the caller holds mu.
func (l *stdioLoop) startRead(ctx context.Context) {
	l.start(func() { l.readLines(ctx) })
}

// readLines routes lines until stdin ends, a write fails, or a line is a
// tools/call, which it serves once another worker reads on.
func (l *stdioLoop) readLines(ctx context.Context) {
	for {
		if err := ctx.Err(); err != nil {
			l.endRead(err)
			return
		}
		line, err := l.in.ReadBytes('\n')
		if len(line) > 0 {
			call, rerr := l.route(ctx, line)
			if rerr != nil {
				l.endRead(rerr)
				return
			}
			if call != nil {
				l.mu.Lock()
				switch {
				case err != nil:
					l.read <- err
				case l.stopped:
					l.read <- errListenEnded
				default:
					l.startRead(ctx)
				}
				l.mu.Unlock()
				call() // this worker's busy count passes to the call
				return
			}
		}
		if err != nil {
			l.endRead(err)
			return
		}
	}
}

func (l *stdioLoop) endRead(err error) {
	l.busy.Add(-1)
	l.read <- err
}

// route passes line to the SDK or answers a refused one, or, for a
// tools/call, takes a slot and returns the call for the caller to run.
func (l *stdioLoop) route(ctx context.Context, line []byte) (call func(), err error) {
	var top topMembers
	if !scanRequest(line, &top) {
		if e := envelopeProblem(line); e != nil {
			_, err := l.out.Write(append(e.response(), '\n'))
			return nil, err
		}
		_, err := l.sdk.Write(line)
		return nil, err
	}
	if !top.odd && top.id == nil && string(top.method) == `"notifications/cancelled"` {
		// The SDK gets it too: it may name a request the SDK serves.
		l.inflight.cancel(line)
		l.s.cancelPending(sessionID(ctx), line)
	}
	if !top.odd && top.id != nil && announced[string(top.method)] {
		// Before the SDK sees it: a cancellation on the next line may be
		// read before the SDK's goroutine tracks the request.
		l.s.announcePending(sessionID(ctx), top.id)
	}
	if top.odd || top.id == nil || !loopServes[string(top.method)] {
		_, err := l.sdk.Write(line)
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		<-l.slots
		return nil, errListenEnded
	}
	l.calls.Add(1)
	// Registered before the next line is read, so a cancellation that
	// follows the call at once finds it.
	ctx, cancel := context.WithCancel(ctx)
	key := string(top.id)
	handle := l.inflight.add(key, cancel)
	// The request ends once: when its handler returns, or earlier when the
	// handler answers it before returning (a run that asks the client
	// goes on after its first input-required round, see runInline).
	var released, done sync.Once
	release := func() {
		released.Do(func() {
			l.inflight.remove(key, handle)
			cancel()
			<-l.slots
		})
	}
	ea := &earlyAnswer{write: func(resp []byte) {
		l.write(resp)
		release()
		done.Do(l.calls.Done)
	}}
	ctx = withEarlyAnswer(ctx, ea)
	// line is the reader's own copy (ReadBytes), so the call may keep it.
	return func() {
		defer done.Do(l.calls.Done)
		resp := l.call(ctx, ea, top.id, string(top.method) == `"tools/call"`, line)
		release()
		// Busy until written: a write can block on a client slow to read,
		// and start must not hand the next task to a worker stuck here
		// (the reader would stall behind it, and with it cancellations
		// and the client's answers to sampling).
		defer l.busy.Add(-1)
		if resp != nil {
			l.write(resp)
		}
	}, nil
}

func (l *stdioLoop) write(resp []byte) {
	if _, err := l.out.Write(append(resp, '\n')); err != nil {
		l.s.log.Debug("write tools/call response", "err", err)
	}
}

// call serves one request the loop serves (loopServes) and returns its
// response, nil for none. A panic that escapes the handlers' own recovery
// becomes an internal error carrying the id.
func (l *stdioLoop) call(ctx context.Context, ea *earlyAnswer, id json.RawMessage, tool bool, line []byte) (resp []byte) {
	defer func() {
		if e := ea.relay.get(); e != nil && resp != nil {
			resp = relayedResponse(id, e)
		}
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				l.s.log.Error("request panicked", "panic", p, "stack", string(debug.Stack()))
				resp = (&envelopeError{code: codeInternalError, id: id, msg: "internal error: the gateway logged it; try again"}).response()
			}
		}()
		if tool {
			if b, ok := l.s.fastCall(ctx, id, line); ok {
				resp = b
				return
			}
		}
		msg := l.s.mcp.HandleMessage(ctx, line)
		if msg == nil {
			return
		}
		var err error
		if resp, err = json.Marshal(msg); err != nil {
			l.s.log.Error("encode a response", "err", err)
			resp = (&envelopeError{code: codeInternalError, id: id, msg: fmt.Sprintf("internal error: encode the result: %v", err)}).response()
		}
	}()
	return resp
}
