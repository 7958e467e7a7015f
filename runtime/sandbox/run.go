package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/textcut"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

var nullJSON = json.RawMessage("null")

// run is one execution. Fields below "JS goroutine" are touched only by
// the goroutine running execute.
type run struct {
	sb      *Sandbox
	ctx     context.Context
	kill    context.CancelCauseFunc
	unit    *unit
	extra   *preamble
	timeout time.Duration

	// inJS is set while the runtime executes JavaScript; the memory
	// watchdog interrupts only such runs.
	inJS  atomic.Bool
	rt    *goja.Runtime
	calls atomic.Int32
	// refused counts calls turned away by MaxCalls (Outcome.Refused).
	refused atomic.Int32

	mu       sync.Mutex // guards logs for abandoned()
	logs     []string
	logBytes int
	dropped  int

	// JS goroutine.
	results    chan callResult
	pending    map[int]*pendingCall
	nextID     int
	rejected   []*goja.Promise // rejections without a handler, in order
	helpers    *goja.Object    // what harden.js returned
	parse      goja.Callable
	newError   func(string) *goja.Object
	failures   map[string]string // rejection message → backend that failed to answer
	rangeError goja.Constructor
}

type pendingCall struct {
	resolve, reject func(any) error
	backend, tool   string
	site            string
}

type callResult struct {
	id  int
	res *toolcall.Result
	err error
}

func (r *run) execute() (out *Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = r.sb.internal(time.Now(), "run the script", fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			out.Logs = r.takeLogs()
		}
	}()
	p, err := r.sb.takeRuntime()
	if err != nil {
		return r.failure(fmt.Errorf("%w: %w", ErrInternal, err))
	}
	p.owner = r
	rt := p.rt
	r.rt, r.helpers, r.parse, r.newError, r.rangeError = rt, p.helpers, p.parse, p.newError, p.rangeError
	rt.SetPromiseRejectionTracker(r.track)
	r.results = make(chan callResult, r.sb.lim.MaxCalls)
	r.pending = map[int]*pendingCall{}
	stop := context.AfterFunc(r.ctx, func() { rt.Interrupt(context.Cause(r.ctx)) })
	defer stop()
	r.sb.watch.add(r)
	defer r.sb.watch.remove(r)

	r.inJS.Store(true)
	if r.extra != nil && r.extra.prg != nil {
		if _, err := rt.RunProgram(r.extra.prg); err != nil {
			r.inJS.Store(false)
			return r.failure(fmt.Errorf("%w: dynamic preamble: %w", ErrInternal, err))
		}
	}
	v, err := rt.RunProgram(r.unit.prg)
	r.inJS.Store(false)
	if err != nil {
		return r.failure(err)
	}
	main, ok := v.Export().(*goja.Promise)
	if !ok {
		return r.success(v)
	}
	return r.loop(main)
}

// regexpTimeoutMs is the threshold at which a failed match counts as timed
// out: the process-wide match timeout (the first New set it) less a margin
// for Date.now's millisecond truncation.
func regexpTimeoutMs() int64 {
	return max(1, regexp2.DefaultMatchTimeout.Milliseconds()*9/10)
}

// loop is the event loop: it delivers tool results on this goroutine until
// main settles and no call is in flight.
func (r *run) loop(main *goja.Promise) *Outcome {
	for {
		switch main.State() {
		case goja.PromiseStateRejected:
			return r.thrown(main.Result())
		case goja.PromiseStateFulfilled:
			if len(r.pending) == 0 {
				if p := r.firstUnhandled(main); p != nil {
					return r.thrown(p.Result())
				}
				return r.success(main.Result())
			}
		default:
			if len(r.pending) == 0 {
				return r.stalled()
			}
		}
		select {
		case res := <-r.results:
			if err := r.deliver(res); err != nil {
				return r.failure(err)
			}
		case <-r.ctx.Done():
			return r.stopped()
		}
	}
}

// track records promises rejected with no handler, as the host hook of
// the spec; a handler added later removes them.
func (r *run) track(p *goja.Promise, op goja.PromiseRejectionOperation) {
	switch op {
	case goja.PromiseRejectionReject:
		r.rejected = append(r.rejected, p)
	case goja.PromiseRejectionHandle:
		for i, q := range r.rejected {
			if q == p {
				r.rejected = append(r.rejected[:i], r.rejected[i+1:]...)
				break
			}
		}
	}
}

func (r *run) firstUnhandled(main *goja.Promise) *goja.Promise {
	for _, p := range r.rejected {
		if p != main {
			return p
		}
	}
	return nil
}

// errCallPanicked is a tool call's error when kiln's side of it panicked;
// the panic and its stack are in kiln's log, not in what the script sees.
var errCallPanicked = errors.New("the backend call failed with an internal error in kiln (kiln logged it)")

// nativeCall implements host.call(backend, tool, argsJSON): it starts the
// backend call on its own goroutine and returns a promise the event loop
// settles.
func (r *run) nativeCall(fc goja.FunctionCall) goja.Value {
	rt := r.rt
	backend, tool := fc.Argument(0).String(), fc.Argument(1).String()
	args := fc.Argument(2).String()
	p, resolve, reject := rt.NewPromise()
	site := r.callSite()
	if n := int(r.calls.Add(1)); n > r.sb.lim.MaxCalls {
		r.calls.Add(-1)
		r.refused.Add(1)
		e := r.newError(fmt.Sprintf("%s.%s was not called: this run already made %d tool calls, the limit per run. "+
			"Batch the work (one call taking a list, if the tool has one) or split it across call_tool_chain requests", backend, tool, r.sb.lim.MaxCalls))
		r.setStack(e, site)
		if err := reject(e); err != nil {
			panic(err)
		}
		return rt.ToValue(p)
	}
	id := r.nextID
	r.nextID++
	r.pending[id] = &pendingCall{resolve: resolve, reject: reject, backend: backend, tool: tool, site: site}
	go func() {
		var res callResult
		defer func() {
			if p := recover(); p != nil {
				safe.Report(r.sb.log, "the script's call of "+backend+"."+tool, p)
				res = callResult{id: id, err: errCallPanicked}
			}
			r.results <- res // buffered to MaxCalls: never blocks
		}()
		out, err := r.sb.opts.Caller.CallTool(r.ctx, backend, tool, json.RawMessage(args))
		if err == nil && out == nil {
			err = errors.New("the backend returned no result")
		}
		res = callResult{id: id, res: out, err: err}
	}()
	return rt.ToValue(p)
}

// deliver settles a finished call's promise; the reactions run before it
// returns.
func (r *run) deliver(res callResult) error {
	pc := r.pending[res.id]
	delete(r.pending, res.id)
	r.inJS.Store(true)
	defer r.inJS.Store(false)
	if res.err != nil {
		if r.ctx.Err() != nil {
			return context.Cause(r.ctx)
		}
		msg := fmt.Sprintf("backend %q is not available: %v", pc.backend, res.err)
		if r.failures == nil {
			r.failures = map[string]string{}
		}
		r.failures[msg] = pc.backend
		return pc.reject(r.toolError(msg, pc))
	}
	if res.res.IsError {
		msg := strings.TrimSpace(res.res.TextContent())
		if msg == "" {
			msg = pc.backend + "." + pc.tool + " failed"
			if len(res.res.StructuredContent) > 0 {
				msg += ": " + string(res.res.StructuredContent)
			}
		}
		return pc.reject(r.toolError(msg, pc))
	}
	v, err := r.toJS(res.res)
	if err != nil {
		return pc.reject(r.toolError(fmt.Sprintf("%s.%s returned a result the sandbox cannot read: %v", pc.backend, pc.tool, err), pc))
	}
	return pc.resolve(v)
}

func (r *run) toolError(msg string, pc *pendingCall) *goja.Object {
	e := r.newError(msg)
	_ = e.Set("tool", pc.backend+"."+pc.tool)
	r.setStack(e, pc.site)
	return e
}

// setStack points an error created by the host at the script line that
// made the call, since no JS frame is active when a result arrives.
func (r *run) setStack(e *goja.Object, site string) {
	stack := "Error: " + e.Get("message").String()
	if site != "" {
		stack += "\n\tat " + site
	}
	_ = e.Set("stack", stack)
}

// callSite returns the innermost frame of the user's script, formatted as
// goja formats stack frames.
func (r *run) callSite() string {
	for _, f := range r.rt.CaptureCallStack(16, nil) {
		pos := f.Position()
		if pos.Filename != userFile || pos.Line > r.unit.lines {
			continue
		}
		if name := f.FuncName(); name != "" {
			return fmt.Sprintf("%s (%s:%d:%d)", name, userFile, pos.Line, pos.Column)
		}
		return fmt.Sprintf("%s:%d:%d", userFile, pos.Line, pos.Column)
	}
	return ""
}

// toJS converts a tool result by the bridge convention: structuredContent;
// else one text block holding JSON, parsed; else the text of all-text
// content; else the content blocks.
func (r *run) toJS(res *toolcall.Result) (goja.Value, error) {
	raw := res.StructuredContent
	if len(raw) == 0 || string(raw) == "null" {
		raw = nil
		text, allText := textOf(res.Content)
		switch {
		case len(res.Content) == 0:
			return goja.Null(), nil
		case allText && len(res.Content) == 1 && json.Valid([]byte(text)):
			raw = json.RawMessage(text)
		case allText:
			return r.rt.ToValue(text), nil
		default:
			raw = append(append(json.RawMessage("["), joinRaw(res.Content)...), ']')
		}
	}
	if !json.Valid(raw) {
		return nil, errors.New("invalid JSON")
	}
	if d := jsontext.Depth(string(raw), 0); d > 1000 {
		return nil, fmt.Errorf("JSON nested %d levels deep", d)
	}
	return r.parse(goja.Undefined(), r.rt.ToValue(string(raw)))
}

func textOf(blocks []json.RawMessage) (string, bool) {
	var b strings.Builder
	for i, c := range blocks {
		var blk struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(c, &blk) != nil || blk.Type != "text" || blk.Text == nil {
			return "", false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(*blk.Text)
	}
	return b.String(), true
}

func joinRaw(blocks []json.RawMessage) []byte {
	var out []byte
	for i, c := range blocks {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c...)
	}
	return out
}

func (r *run) nativeLog(fc goja.FunctionCall) goja.Value {
	level, line := fc.Argument(0).String(), fc.Argument(1).String()
	if level != "log" && level != "info" {
		line = "[" + level + "] " + line
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if room := r.sb.lim.MaxLogBytes - r.logBytes; len(line) > room || r.dropped > 0 {
		if room > 0 && r.dropped == 0 {
			r.logs = append(r.logs, textcut.Prefix(line, room)+" …")
			r.logBytes = r.sb.lim.MaxLogBytes
		}
		r.dropped++
		return goja.Undefined()
	}
	r.logs = append(r.logs, line)
	r.logBytes += len(line)
	return goja.Undefined()
}

func (r *run) takeLogs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	logs := r.logs
	if r.dropped > 0 {
		logs = append(logs, fmt.Sprintf("[console output truncated at %d bytes; %d more calls dropped]", r.sb.lim.MaxLogBytes, r.dropped))
	}
	return logs
}
