package backend

import (
	"errors"
	"io"
	"strings"
	"sync"
)

// ring keeps the last max bytes a backend wrote to stderr, so errors can
// show why a process died without letting a chatty server grow memory.
type ring struct {
	mu  sync.Mutex
	buf []byte
	max int
	// drained is closed when the process's stderr reaches end of file:
	// after that every line it wrote is in buf.
	drained   chan struct{}
	drainOnce sync.Once
}

func newRing(max int) *ring { return &ring{max: max, drained: make(chan struct{})} }

// ReadFrom copies a process's stderr pipe into the ring (os/exec's copy
// calls it) and marks the end of the stream, so an exit can wait for the
// last lines a dying process wrote before reporting them.
func (r *ring) ReadFrom(src io.Reader) (int64, error) {
	defer r.drainOnce.Do(func() { close(r.drained) })
	var n int64
	buf := make([]byte, 32<<10)
	for {
		m, err := src.Read(buf)
		if m > 0 {
			r.Write(buf[:m])
			n += int64(m)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(p), nil
}

// tail returns at most n trailing non-empty lines.
func (r *ring) tail(n int) string {
	r.mu.Lock()
	s := string(r.buf)
	r.mu.Unlock()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimRight(lines[i], "\r "); l != "" {
			keep = append(keep, l)
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return strings.Join(keep, "\n")
}
