//go:build e2e

package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// drainKiln serves the fault server (a required backend) with the given
// drain timeout and returns kiln and the fault server's event folder.
func drainKiln(t *testing.T, drain string) (*opsKiln, string) {
	t.Helper()
	events := t.TempDir()
	k := startOpsKiln(t, fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  metrics_addr: 127.0.0.1:0
  drain_timeout: %s
backends:
  fault:
    command: %s
    required: true
    env:
      FAULT_STATE_DIR: %s
`, t.TempDir(), drain, faultBin(t), events))
	waitReady(t, k.metrics)
	return k, events
}

// TestDrainOnSIGTERM: SIGTERM during a slow call turns /readyz to 503 on
// both listeners at once, lets the call finish, then kiln exits 0; a call
// that outlives gateway.drain_timeout is cut off at the deadline.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Run("call finishes", func(t *testing.T) {
		k, evdir := drainKiln(t, "60s")
		s := newSDKHTTP(t, k.mcp)
		type out struct {
			r   result
			err error
		}
		done := make(chan out, 1)
		go func() {
			r, err := s.Call(t.Context(), "call_tool_chain", map[string]any{"code": `{"tool": "fault.slow", "arguments": {"ms": 5000}}`})
			done <- out{r, err}
		}()
		eventually(t, "the slow call reached the backend", func() bool { return strings.Contains(events(evdir), "call slow") })
		if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		eventually(t, "/readyz answers 503 while draining", func() bool {
			code, body := get(t, k.metrics+"/readyz")
			return code == http.StatusServiceUnavailable && strings.Contains(body, "draining")
		})
		if code, _ := get(t, k.mcp+"/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("--http /readyz = %d while draining, want 503", code)
		}
		if code, _ := get(t, k.mcp+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz = %d while draining, want 200: the process still serves", code)
		}
		select {
		case <-k.exited:
			t.Fatal("kiln exited with the slow call still in flight")
		default:
		}
		got := <-done
		if got.err != nil || got.r.IsError || !strings.Contains(got.r.Text(), "slept 5000ms") {
			t.Fatalf("the call in flight during the drain: %v %s", got.err, got.r.Text())
		}
		select {
		case <-k.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("kiln did not exit after the drain")
		}
		if k.exitErr != nil {
			t.Errorf("kiln exit after a drain: %v, want status 0", k.exitErr)
		}
	})
	t.Run("deadline cuts off", func(t *testing.T) {
		k, evdir := drainKiln(t, "1s")
		s := newSDKHTTP(t, k.mcp)
		// answered is set when hang answers without an error, which it
		// must not: the drain deadline cuts it off.
		answered := make(chan string, 1)
		go func() {
			// Bounded: once kiln is gone the client may wait for an answer
			// that cannot come; only its not answering success matters.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			r, err := s.Call(ctx, "call_tool_chain", map[string]any{"code": `{"tool": "fault.hang"}`})
			if err == nil && !r.IsError {
				answered <- r.Text()
			}
			close(answered)
		}()
		eventually(t, "the hanging call reached the backend", func() bool { return strings.Contains(events(evdir), "running hang") })
		if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-k.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("kiln did not exit after gateway.drain_timeout with a call hanging")
		}
		if !strings.Contains(k.logged(), "gateway.drain_timeout passed with calls still running") {
			t.Error("kiln did not log that the drain deadline cut calls off")
		}
		if text, ok := <-answered; ok {
			t.Errorf("the hanging call answered: %s", text)
		}
	})
}
