package main

import (
	"fmt"
	"io"
	"sync"
)

// lockedWriter serializes writes to stdout. The SDK's stdio connection
// writes each message, newline included, in one Write call, so taking the
// same lock for garbage lines keeps them from landing inside a message.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// Close is a no-op: the connection closing must not close os.Stdout under
// the garbage writer.
func (lw *lockedWriter) Close() error { return nil }

// garbage writes non-JSON lines to stdout when FAULT_STDOUT_GARBAGE is set.
// A nil *garbage writes nothing.
type garbage struct {
	out io.Writer
}

// line writes one non-JSON line naming when it was written.
func (g *garbage) line(when string) {
	if g == nil {
		return
	}
	_, _ = fmt.Fprintf(g.out, "garbage: this is not JSON-RPC (%s)\n", when)
}
