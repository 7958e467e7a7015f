package backend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/rawio"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// stdioPipe owns a stdio backend's process and its stdin and stdout.
// mcp-go's transport runs on ends kiln hands it (transport.NewIO): its
// writes go through kiln's lock, and it reads the backend's stdout lines
// kiln does not take, in order. Kiln writes its own tools/call requests
// and takes their responses (rawcall.go): mcp-go's SendRequest
// json.Marshals each request (reflection over the envelope, then
// validating and compacting the arguments again) and its reader
// json.Unmarshals every line, twice, just to route it, before kiln
// decoded the result once more. In a tier-1 echo's CPU profile
// (BenchmarkEchoHop, 15,000 calls) mcp-go's send and read paths were 17%
// of kiln's CPU; this pipe's are 5.5%, write and read syscalls included.
type stdioPipe struct {
	cfg    *config.Backend
	stderr *ring
	cmd    *exec.Cmd

	// wmu keeps lines whole: mcp-go writes each message with one Write,
	// and so does kiln. stdin is set once, before any write.
	wmu   sync.Mutex
	stdin io.WriteCloser
	// stdout is read by read alone; close closes it.
	stdout io.ReadCloser

	feed *sdkFeed

	mu      sync.Mutex
	pending map[string]chan rawResponse // by the quoted request id
	// done is closed when the backend's stdout ends or the transport is
	// closed; no response arrives after it.
	done     chan struct{}
	doneOnce sync.Once

	waitOnce sync.Once
	waitErr  error

	log *slog.Logger // for a panic reading stdout; set before start
}

func newStdioPipe(cfg *config.Backend, stderr *ring) *stdioPipe {
	return &stdioPipe{cfg: cfg, stderr: stderr, feed: newSDKFeed(),
		pending: map[string]chan rawResponse{}, done: make(chan struct{})}
}

// start spawns the backend. Not exec.CommandContext: the process must
// outlive the dial context; Close stops it.
func (p *stdioPipe) start() error {
	if p.cmd != nil {
		return nil
	}
	cmd := exec.Command(p.cfg.Command, p.cfg.Args...)
	cmd.Env = p.cfg.Environ(inheritedEnv(os.Environ()))
	cmd.Dir = p.cfg.Cwd
	cmd.Stderr = p.stderr
	// A grandchild that left the process group (setsid) and keeps stderr
	// open would hold Wait, and the goroutine that closes the backend,
	// forever: past StopGrace after the exit, the copy is cut.
	cmd.WaitDelay = StopGrace
	// Own process group: stopping a backend also stops the children it
	// spawned (npx, shells, language servers).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("failed to create stdin pipe: %w", err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return fmt.Errorf("failed to create stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	err = cmd.Start()
	// The child has its own copies; kiln's would keep the pipes open past
	// the backend's exit.
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return fmt.Errorf("failed to start command: %w", err)
	}
	p.cmd, p.stdin, p.stdout = cmd, rawio.OrFile(stdin), rawio.OrFile(stdout)
	go p.read(p.stdout)
	return nil
}

// close ends the pipe for callers still waiting and reaps the process
// (Conn.Close signals its group; stdin is closed by mcp-go's Close).
func (p *stdioPipe) close() error {
	p.feed.close()
	p.end()
	p.waitOnce.Do(func() {
		if p.cmd != nil {
			p.waitErr = p.cmd.Wait()
			// As exec's own pipes are closed after Wait: a grandchild
			// still holding the backend's stdout must not keep the
			// reader waiting. stdin may be closed already (mcp-go's
			// Close).
			_ = p.stdout.Close()
			_ = p.stdin.Close()
		}
	})
	return p.waitErr
}

func (p *stdioPipe) end() { p.doneOnce.Do(func() { close(p.done) }) }

// lineReadSize is the reader's buffer; longer lines (MBs of results) are
// gathered in a slice of their own, without a limit, as mcp-go reads them.
const lineReadSize = 64 << 10

// read routes the backend's stdout, line by line, until it ends.
func (p *stdioPipe) read(stdout io.Reader) {
	defer func() {
		p.feed.close()
		p.end()
	}()
	// Runs first: a line that makes the reader panic ends this backend,
	// not kiln. Its process is killed, as no one reads it any more: the
	// connection ends with it and the supervisor starts it again.
	defer func() {
		if r := recover(); r != nil {
			safe.Report(p.log, "reading backend "+p.cfg.Name+"'s stdout", r)
			if p.cmd != nil && p.cmd.Process != nil {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}()
	r := bufio.NewReaderSize(stdout, lineReadSize)
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line, owned := chunk, false
		if long != nil {
			line, owned, long = append(long, chunk...), true, nil
		}
		if len(line) > 0 {
			p.route(line, owned)
		}
		if err != nil {
			return
		}
	}
}

// route hands a response to one of kiln's calls to its caller, after
// mcp-go has handled every line before it (the call's progress and log
// notifications reach kiln before its result does, as they did when
// mcp-go read everything). Every other line goes to mcp-go unchanged;
// one that is not JSON is dropped there, as before. line is the reader's
// buffer unless owned.
func (p *stdioPipe) route(line []byte, owned bool) {
	if f, ok := scanResponse(unsafe.String(&line[0], len(line))); ok {
		p.mu.Lock()
		ch := p.pending[f.id]
		delete(p.pending, f.id)
		p.mu.Unlock()
		if ch != nil {
			if !owned {
				line = bytes.Clone(line)
			}
			p.feed.settle()
			ch <- rawResponse{line: line, result: f.result, error: f.error}
			return
		}
	}
	p.feed.push(line)
}

// call writes line, a request with id (quoted, as in the line), and
// returns the backend's response line. The errors are mcp-go's:
// transport.ErrTransportClosed when the backend's stdout ended first, or
// ctx's.
func (p *stdioPipe) call(ctx context.Context, id string, line []byte) (rawResponse, error) {
	ch := make(chan rawResponse, 1)
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return rawResponse{}, transport.ErrTransportClosed
	default:
	}
	p.pending[id] = ch
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}
	if err := p.write(line); err != nil {
		forget()
		select {
		case <-p.done:
			return rawResponse{}, transport.ErrTransportClosed
		default:
		}
		return rawResponse{}, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-p.done:
		// The response may have come just before the end.
		select {
		case resp := <-ch:
			return resp, nil
		default:
		}
		forget()
		return rawResponse{}, transport.ErrTransportClosed
	case <-ctx.Done():
		forget()
		return rawResponse{}, ctx.Err()
	}
}

func (p *stdioPipe) write(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.stdin == nil {
		return errors.New("stdio client not started")
	}
	_, err := p.stdin.Write(line)
	return err
}

// sdkWriter is the stdin mcp-go writes to.
type sdkWriter struct{ p *stdioPipe }

func (w sdkWriter) Write(b []byte) (int, error) {
	if err := w.p.write(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close does not take the write lock: a write blocked on a backend that
// stopped reading its stdin holds it.
func (w sdkWriter) Close() error {
	if w.p.stdin == nil {
		return nil
	}
	return w.p.stdin.Close()
}

// response is where scanResponse found a response's members in its line.
type response struct {
	id            string // quoted, a view into the line
	result, error [2]int // value spans; zero when absent
}

// rawResponse is a response line handed to the call that waits for it,
// with the spans of its result and error.
type rawResponse struct {
	line          []byte
	result, error [2]int
}

// rawIDPrefix starts the quoted id of every request kiln sends itself.
const rawIDPrefix = `"kiln-call-`

// scanResponse reads the top-level members of a response to one of kiln's
// own requests without decoding it, and reports false for anything else
// (a line with a method, another id, or not a JSON object) as soon as it
// can tell. It does not validate: the caller decodes the spans it uses,
// and jsontext's walkers stay within s on any text.
func scanResponse(s string) (response, bool) {
	var r response
	i := jsontext.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return r, false
	}
	for i = jsontext.SkipSpace(s, i+1); i < len(s) && s[i] == '"'; {
		ke, ok := jsontext.StringEnd(s, i)
		if !ok {
			return r, false
		}
		key := s[i+1 : ke-1]
		i = jsontext.SkipSpace(s, ke)
		if i >= len(s) || s[i] != ':' {
			return r, false
		}
		vs := jsontext.SkipSpace(s, i+1)
		if vs >= len(s) {
			return r, false
		}
		ve := jsontext.ValueEnd(s, vs)
		switch key {
		case "id":
			if r.id = s[vs:ve]; !strings.HasPrefix(r.id, rawIDPrefix) {
				return r, false
			}
		case "method":
			return r, false
		case "result":
			r.result = [2]int{vs, ve}
		case "error":
			r.error = [2]int{vs, ve}
		}
		if i = jsontext.SkipSpace(s, ve); i < len(s) && s[i] == ',' {
			i = jsontext.SkipSpace(s, i+1)
		}
	}
	return r, i < len(s) && s[i] == '}' && r.id != ""
}

// sdkFeed is the stdout mcp-go's transport reads: the lines kiln does not
// take. A line is handed over whole before the next, so kiln can tell
// when mcp-go has handled everything it was given: its reader asks for
// more only once its buffer holds no complete line, that is after it has
// dispatched each one (notifications synchronously).
type sdkFeed struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte
	// idle: the reader waits in Read with nothing left to read.
	idle   bool
	closed bool
}

func newSDKFeed() *sdkFeed {
	f := &sdkFeed{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *sdkFeed) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.buf) == 0 {
		if f.closed {
			return 0, io.EOF
		}
		f.idle = true
		f.cond.Broadcast()
		f.cond.Wait()
	}
	f.idle = false
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	if len(f.buf) == 0 {
		f.cond.Broadcast()
	}
	return n, nil
}

// push hands line to the reader and returns once it has all been read, so
// the caller may reuse it.
func (f *sdkFeed) push(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.buf = line
	f.cond.Broadcast()
	for len(f.buf) > 0 && !f.closed {
		f.cond.Wait()
	}
}

// settle waits until the reader has handled every line pushed so far.
func (f *sdkFeed) settle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !(f.idle && len(f.buf) == 0) && !f.closed {
		f.cond.Wait()
	}
}

// close makes Read report the end of the stream, dropping what is unread:
// push's line may be the router's buffer, which it reuses once push returns.
func (f *sdkFeed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed, f.buf = true, nil
	f.cond.Broadcast()
}
