package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// eventLog appends one line per event to events.log in the state directory.
// A nil *eventLog discards events, so callers need not check whether
// FAULT_STATE_DIR was set.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

// openEvents writes dir/pid and opens dir/events.log for appending. It
// returns nil, nil when dir is empty.
func openEvents(dir string) (*eventLog, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(pid+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("state dir: write pid: %w", err)
	}
	// O_APPEND makes each single write land whole at the end even when an
	// earlier process of the same backend still has the file open.
	f, err := os.OpenFile(filepath.Join(dir, "events.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state dir: open events.log: %w", err)
	}
	return &eventLog{f: f}, nil
}

// add appends one formatted line. Errors are ignored: the log is evidence for
// tests, and a test that misses a line fails on its own.
func (l *eventLog) add(format string, args ...any) {
	if l == nil {
		return
	}
	line := fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.WriteString(line)
}
