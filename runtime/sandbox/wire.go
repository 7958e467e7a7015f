package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// The host and a worker exchange frames over the worker's stdin and
// stdout: a 4-byte big-endian length, then one JSON object. The worker's
// stdout carries nothing else (its logs go to stderr).
//
//	host → worker: init (once), run, result (of a tool call), cancel
//	worker → host: ready (once), call, drop (the run gave up on a call), done
const (
	frameInit   = "init"
	frameReady  = "ready"
	frameRun    = "run"
	frameCall   = "call"
	frameResult = "result"
	frameDrop   = "drop"
	frameCancel = "cancel"
	frameDone   = "done"
)

// maxFrame bounds one frame. The largest legitimate ones are a backend's
// result on its way to a script and a script's return value (8 MiB by
// default); a longer length prefix means the stream is corrupt.
const maxFrame = 256 << 20

type frame struct {
	T  string `json:"t"`
	ID int64  `json:"id,omitempty"`

	Init *workerInit `json:"init,omitempty"`
	// Ready: the worker's address-space size once prepared (VmSize), and
	// the hard limit it set on itself, if any.
	VSZ    int64 `json:"vsz,omitempty"`
	Rlimit int64 `json:"rlimit,omitempty"`
	// Data is the worker's writable private memory once prepared
	// (VmData), and RlimitData the data limit it set on itself.
	Data       int64 `json:"data,omitempty"`
	RlimitData int64 `json:"rlimitData,omitempty"`

	Run *workerRun `json:"run,omitempty"`

	// Call.
	Backend string          `json:"backend,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`

	// Result of a call: Result, or Err with the dispatcher's message.
	Result *toolcall.Result `json:"result,omitempty"`
	Err    string           `json:"err,omitempty"`

	Out *wireOutcome `json:"out,omitempty"`
}

// workerInit configures a worker once: the compiled preamble and limits
// are the same for every run it serves.
type workerInit struct {
	Preamble string           `json:"preamble"`
	Bindings []bridge.Binding `json:"bindings,omitempty"`
	Limits   Limits           `json:"limits"`
	// RlimitSlack, when positive, asks the worker to cap its address space
	// at its prepared size plus Limits.Memory plus this slack; DataSlack
	// likewise its data segment (RLIMIT_DATA).
	RlimitSlack int64 `json:"rlimitSlack,omitempty"`
	DataSlack   int64 `json:"dataSlack,omitempty"`
	// SoftLimit asks the worker to set debug.SetMemoryLimit to its
	// prepared Go memory plus Limits.Memory, so the collector works hard
	// before the hard limit is reached.
	SoftLimit bool `json:"softLimit,omitempty"`
}

type workerRun struct {
	Code  string `json:"code"`
	Extra string `json:"extra,omitempty"`
	// ExtraBindings is what Extra binds (RunOptions.ExtraBindings).
	ExtraBindings []bridge.Binding `json:"extraBindings,omitempty"`
	Timeout       time.Duration    `json:"timeout"`
	Backends      []string         `json:"backends,omitempty"`
}

// wireOutcome is an Outcome with its Cause reduced to a sentinel index
// and text, rebuilt by toOutcome on the host.
type wireOutcome struct {
	Value   json.RawMessage `json:"value"`
	Logs    []string        `json:"logs,omitempty"`
	Calls   int             `json:"calls,omitempty"`
	Refused int             `json:"refused,omitempty"`
	IsError bool            `json:"isError,omitempty"`
	Error   string          `json:"error,omitempty"`
	Kind    int             `json:"kind,omitempty"`
	Cause   string          `json:"cause,omitempty"`
	// Dirty: the run's goroutine had not finished when the outcome was
	// sent (native code ran past an interrupt); the worker must go.
	Dirty bool `json:"dirty,omitempty"`
}

// sentinels are the causes an Outcome can carry, numbered from 1 on the wire.
var sentinels = []error{ErrBusy, ErrSyntax, ErrThrown, ErrTimeout, ErrMemory, ErrStalled, ErrResult, ErrCanceled, ErrInternal}

func fromOutcome(o *Outcome) *wireOutcome {
	w := &wireOutcome{Value: o.Value, Logs: o.Logs, Calls: o.Calls, Refused: o.Refused, IsError: o.IsError, Error: o.Error}
	if o.Cause != nil {
		w.Cause = o.Cause.Error()
		for i, s := range sentinels {
			if errors.Is(o.Cause, s) {
				w.Kind = i + 1
				break
			}
		}
	}
	return w
}

func (w *wireOutcome) toOutcome() *Outcome {
	o := &Outcome{Value: w.Value, Logs: w.Logs, Calls: w.Calls, Refused: w.Refused, IsError: w.IsError, Error: w.Error}
	if len(o.Value) == 0 {
		o.Value = nullJSON
	}
	switch {
	case w.Kind > 0 && w.Kind <= len(sentinels):
		o.Cause = &causeError{sentinel: sentinels[w.Kind-1], text: w.Cause}
	case w.Cause != "":
		o.Cause = errors.New(w.Cause)
	}
	return o
}

// causeError is a Cause rebuilt on the host: the worker's text, matching
// the sentinel under errors.Is.
type causeError struct {
	sentinel error
	text     string
}

func (e *causeError) Error() string { return e.text }
func (e *causeError) Unwrap() error { return e.sentinel }

// frameWriter writes frames from any goroutine.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

func (fw *frameWriter) write(f *frame) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.buf.Reset()
	fw.buf.Write([]byte{0, 0, 0, 0})
	enc := json.NewEncoder(&fw.buf)
	// Values are JSON text the model reads: keep <, > and & as written.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("encode %s frame: %w", f.T, err)
	}
	b := fw.buf.Bytes()
	if len(b)-4 > maxFrame {
		return fmt.Errorf("%s frame of %d bytes exceeds the %d-byte frame limit", f.T, len(b)-4, maxFrame)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := fw.w.Write(b)
	// A large frame would keep its buffer alive between runs.
	if fw.buf.Cap() > 1<<20 {
		fw.buf = bytes.Buffer{}
	}
	return err
}

// readFrame reads one frame; io.EOF means the peer closed the stream.
func readFrame(r *bufio.Reader) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %d-byte frame limit", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("read a %d-byte frame: %w", n, err)
	}
	f := &frame{}
	if err := json.Unmarshal(body, f); err != nil {
		return nil, fmt.Errorf("decode frame: %w", err)
	}
	return f, nil
}
