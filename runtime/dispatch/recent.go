package dispatch

import (
	"errors"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// recentCalls is how many calls kiln://recent can show.
const recentCalls = 200

// CallRecord is one finished backend call.
type CallRecord struct {
	Time     time.Time
	Backend  string
	Tool     string
	Duration time.Duration
	// Outcome is "ok", "tool_error" (the backend answered with isError) or
	// the dispatch error code.
	Outcome string
}

func outcome(res *toolcall.Result, err error) string {
	var de *Error
	switch {
	case errors.As(err, &de):
		return string(de.Code)
	case err != nil:
		return string(CodeBackend)
	case res.IsError:
		return "tool_error"
	}
	return "ok"
}

// recentLog is a fixed ring of call records.
type recentLog struct {
	mu   sync.Mutex
	buf  []CallRecord
	next int
	full bool
}

func newRecentLog(n int) *recentLog { return &recentLog{buf: make([]CallRecord, n)} }

func (r *recentLog) add(c CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = c
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
}

// Recent returns up to n of the latest calls, newest first.
func (d *Dispatcher) Recent(n int) []CallRecord {
	r := d.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	size := r.next
	if r.full {
		size = len(r.buf)
	}
	n = min(max(n, 0), size)
	out := make([]CallRecord, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}
