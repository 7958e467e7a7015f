package backend

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitMidCallFailsFastAndClosesDone(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	_, err := c.CallTool(t.Context(), "die", nil, nil)
	if !errors.Is(err, ErrGone) {
		t.Fatalf("call to a dying backend: err = %v, want ErrGone", err)
	}
	if !strings.Contains(err.Error(), "die tool called") {
		t.Errorf("error %q lacks the backend's last stderr line", err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the process exited")
	}
	if c.Exit() == nil || !strings.Contains(c.Exit().Error(), "exited") {
		t.Errorf("Exit() = %v, want a process exit", c.Exit())
	}
}

func TestDoneOpenWhileServing(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	if err := c.Probe(t.Context()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed on a live session")
	default:
	}
	if c.Exit() != nil {
		t.Errorf("Exit() = %v on a live session", c.Exit())
	}
}

func TestCloseKillsProcessIgnoringSIGTERM(t *testing.T) {
	c := dial(t, stdioConfig(t, "stubborn"))
	pid := c.proc.Process.Pid
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) && !zombie(pid) {
		t.Fatalf("process %d ignoring SIGTERM survived Close (kill -0: %v)", pid, err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done open after Close stopped the process")
	}
}
