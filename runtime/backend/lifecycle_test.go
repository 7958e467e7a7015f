package backend

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

func TestExitMidCallFailsFastAndClosesDone(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	_, err := c.CallTool(t.Context(), "die", nil, CallOptions{})
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

func TestDialHonoursDeadlineOnSilentServer(t *testing.T) {
	// A server that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tr := range []string{config.TransportSSE, config.TransportHTTP} {
		t.Run(tr, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := DialTimeout(t.Context(), &config.Backend{Name: "silent", Transport: tr, URL: "http://" + ln.Addr().String() + "/mcp", Enabled: true}, 300*time.Millisecond, Options{})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("dial of a silent server succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("dial ignored its 300ms deadline")
			}
		})
	}
}

// The stderr ring learns when the process's stderr ends, so an exit is
// reported with the last lines the process wrote.
func TestStderrRingSeesEndOfStream(t *testing.T) {
	r := newRing(1024)
	cmd := exec.Command("sh", "-c", "echo first >&2; echo 'panic: last words' >&2")
	cmd.Stderr = r
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.drained:
	default:
		t.Fatal("stderr ended but the ring was not told")
	}
	if got := r.tail(1); got != "panic: last words" {
		t.Errorf("tail = %q", got)
	}
}
