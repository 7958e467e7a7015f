package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// success serializes the returned value with the capped encoder.
func (r *run) success(v goja.Value) *Outcome {
	out := &Outcome{Value: nullJSON, Calls: int(r.calls.Load()), Refused: int(r.refused.Load())}
	var s goja.Value
	ex, err := r.guard(func() { s = r.stringifyJSON(v, nil, r.sb.lim.MaxResultBytes, nil) })
	switch {
	case err != nil:
		return r.failure(err)
	case ex != nil:
		header, _ := r.describe(ex.Value())
		out.IsError = true
		out.Error = "the script's return value cannot be sent back as JSON: " + header +
			"\nhint: return plain data (objects, arrays, strings, numbers), or a smaller part of it"
		out.Cause = fmt.Errorf("%w: %s", ErrResult, header)
	case !goja.IsUndefined(s):
		out.Value = json.RawMessage(s.String())
	}
	out.Logs = r.takeLogs()
	return out
}

// guard runs f, which may run JavaScript, outside the VM: a JS exception
// comes back as ex, an interrupt or stack overflow as err.
func (r *run) guard(f func()) (ex *goja.Exception, err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok && isUncatchable(e) {
				err = e
				return
			}
			panic(p)
		}
	}()
	r.inJS.Store(true)
	defer r.inJS.Store(false)
	return r.rt.Try(f), nil
}

func isUncatchable(err error) bool {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	return errors.As(err, &ie) || errors.As(err, &so)
}

// failure turns an error from the engine into an Outcome.
func (r *run) failure(err error) *Outcome {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case errors.As(err, &ie) || r.ctx.Err() != nil:
		return r.stopped()
	case errors.As(err, &so):
		msg := fmt.Sprintf("RangeError: Maximum call stack size exceeded (more than %d nested calls)", r.sb.lim.MaxCallStack) +
			r.frames(so.Stack())
		return r.errorOutcome(msg+"\nhint: the recursion has no base case or is too deep; use a loop", ErrThrown)
	case errors.As(err, &ex):
		return r.thrown(ex.Value())
	case errors.Is(err, ErrInternal):
		out := r.sb.internal(time.Now(), "start the script", err)
		out.Logs = r.takeLogs()
		return out
	}
	out := r.sb.internal(time.Now(), "run the script", err)
	out.Logs = r.takeLogs()
	return out
}

// thrown reports an uncaught exception or rejection with the script's
// stack and a hint.
func (r *run) thrown(v goja.Value) *Outcome {
	header, stack := r.describe(v)
	msg := "Uncaught " + header + r.userStack(stack)
	if h := r.hint(header, stack); h != "" {
		msg += "\nhint: " + h
	}
	return r.errorOutcome(msg, ErrThrown)
}

func (r *run) errorOutcome(msg string, cause error) *Outcome {
	out := errorOutcome(msg, cause, r.takeLogs(), int(r.calls.Load()))
	out.Refused = int(r.refused.Load())
	return out
}

func errorOutcome(msg string, cause error, logs []string, calls int) *Outcome {
	return &Outcome{
		Value:   nullJSON,
		Logs:    logs,
		Calls:   calls,
		IsError: true,
		Error:   msg,
		Cause:   fmt.Errorf("%w: %s", cause, firstLine(msg)),
	}
}

// describe returns "Name: message" and the stack text of a thrown value,
// computed in JS by harden.js, which guards against throwing getters.
func (r *run) describe(v goja.Value) (header, stack string) {
	fn, ok := goja.AssertFunction(r.helpers.Get("describe"))
	if !ok {
		return v.String(), ""
	}
	r.inJS.Store(true)
	res, err := fn(goja.Undefined(), v)
	r.inJS.Store(false)
	if err != nil {
		return "exception (it could not be described)", ""
	}
	o := res.ToObject(r.rt)
	return o.Get("header").String(), o.Get("stack").String()
}

// framePos matches the position of a frame in the script in a goja stack.
var framePos = regexp.MustCompile(regexp.QuoteMeta(userFile) + `:(\d+):(\d+)(?:\(\d+\))?`)

// userStack keeps the frames of the script from a goja stack string, with
// positions in the script's own lines and columns.
func (r *run) userStack(stack string) string {
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(stack, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "at ") || !r.inScript(line) {
			continue
		}
		if n++; n > 10 {
			b.WriteString("\n    …")
			break
		}
		b.WriteString("\n    " + r.mapPositions(line))
	}
	return b.String()
}

func (r *run) frames(frames []goja.StackFrame) string {
	var lines []string
	for _, f := range frames {
		p := f.Position()
		if p.Filename != userFile {
			continue
		}
		line := fmt.Sprintf("at %s:%d:%d", userFile, p.Line, p.Column)
		if f.FuncName() != "" {
			line = fmt.Sprintf("at %s (%s:%d:%d)", f.FuncName(), userFile, p.Line, p.Column)
		}
		if len(lines) > 0 && lines[len(lines)-1] == line {
			continue
		}
		if lines = append(lines, line); len(lines) == 5 {
			break
		}
	}
	return r.userStack(strings.Join(lines, "\n"))
}

// mapPositions rewrites script positions in a stack to the script's own
// lines and 1-based columns.
func (r *run) mapPositions(s string) string {
	return framePos.ReplaceAllStringFunc(s, func(m string) string {
		sub := framePos.FindStringSubmatch(m)
		line, _ := strconv.Atoi(sub[1])
		col, _ := strconv.Atoi(sub[2])
		if r.unit.mapped {
			col++
		}
		col = r.unit.ins.shift(line, col)
		if line == 1 && col > r.unit.shift {
			col -= r.unit.shift
		}
		return fmt.Sprintf("%s:%d:%d", userFile, line, col)
	})
}

// inScript reports whether a stack line points into the script rather
// than the wrapper around it.
func (r *run) inScript(line string) bool {
	m := framePos.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[1])
	return n <= r.unit.lines
}

// firstPosition returns the first script position in a stack.
func (r *run) firstPosition(stack string) (line, col int, ok bool) {
	var m []string
	for _, l := range strings.Split(stack, "\n") {
		if r.inScript(l) {
			m = framePos.FindStringSubmatch(r.mapPositions(l))
			break
		}
	}
	if m == nil {
		return 0, 0, false
	}
	line, _ = strconv.Atoi(m[1])
	col, _ = strconv.Atoi(m[2])
	return line, col, true
}

// stopped reports a run ended by its context: deadline, memory or cancel.
func (r *run) stopped() *Outcome {
	msg, sentinel := stopMessage(context.Cause(r.ctx), r.sb.lim.Memory, r.timeout, len(r.pending))
	return r.errorOutcome(msg, sentinel)
}

// stopMessage says why a run was stopped, in the words a model reads from
// either engine: in-process, or a worker the host killed.
func stopMessage(cause error, memory int64, timeout time.Duration, pending int) (string, error) {
	switch {
	case errors.Is(cause, ErrMemory):
		return fmt.Sprintf("the script used more than its %d MiB memory budget and was stopped; process less data at once (fetch pages, select fields)", memory>>20), ErrMemory
	case errors.Is(cause, ErrTimeout):
		msg := fmt.Sprintf("the script did not finish within %v and was stopped", timeout)
		if pending > 0 {
			msg += fmt.Sprintf(" while waiting for %d tool calls", pending)
		}
		return msg + "; pass a larger timeout, make fewer calls, or check for an endless loop", ErrTimeout
	default:
		return "the run was canceled by the client", ErrCanceled
	}
}

// stalled reports a script awaiting a promise that nothing can settle:
// no tool call is in flight and the sandbox has no timers.
func (r *run) stalled() *Outcome {
	return r.errorOutcome("the script is waiting on a promise that can never settle (no tool call is in flight, and the sandbox has no timers); "+
		"await the tool calls themselves", ErrStalled)
}

// abandoned is the Outcome when the run's goroutine did not stop by the
// deadline (native code runs to completion). It reads only what is safe
// from another goroutine.
func (r *run) abandoned() *Outcome {
	cause := context.Cause(r.ctx)
	msg := fmt.Sprintf("the script did not finish within %v and was stopped", r.timeout)
	sentinel := ErrTimeout
	if errors.Is(cause, ErrMemory) {
		msg, sentinel = fmt.Sprintf("the script used more than its %d MiB memory budget and was stopped", r.sb.lim.Memory>>20), ErrMemory
	} else if !errors.Is(cause, ErrTimeout) {
		msg, sentinel = "the run was canceled by the client", ErrCanceled
	}
	return r.errorOutcome(msg, sentinel)
}
