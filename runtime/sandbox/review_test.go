package sandbox

import (
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/bridge"
)

// TestPoolNoWorkerAfterClose holds the spare worker a run asks for until
// the pool has closed: it must not start a process nobody will kill (it
// joined the idle workers and lived as long as kiln).
func TestPoolNoWorkerAfterClose(t *testing.T) {
	gate := make(chan struct{})
	var calls atomic.Int32
	cmd := func() *exec.Cmd {
		if calls.Add(1) == 2 {
			<-gate
		}
		return workerCommand()
	}
	p, err := NewPool(Options{Preamble: string(bridge.Preamble(testBackends)), Bindings: bridge.Lookup(testBackends).Bindings(),
		Caller: &fakeCaller{fn: echo}}, WorkerOptions{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	expectPoolValue(t, p, `return 1`, "1")
	for calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	p.Close()
	close(gate)
	// The spare either gives up (live back to the first worker alone) or
	// joins the first, dead one among the idle.
	for {
		p.mu.Lock()
		live := p.live
		p.mu.Unlock()
		if live == 1 {
			break
		}
		if len(p.idle) == 2 {
			w := <-p.idle
			if !w.alive() {
				w = <-p.idle
			}
			alive := w.alive()
			w.kill()
			t.Fatalf("a worker started after Close (alive: %v)", alive)
		}
		time.Sleep(time.Millisecond)
	}
}
