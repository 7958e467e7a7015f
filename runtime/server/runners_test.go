package server

import (
	"runtime"
	"sync"
	"testing"
)

// TestRunnersReuseAndBoundIdleGoroutines checks that sequential runs share
// one goroutine, that concurrent runs each get one (none waits for
// another), and that at most maxIdleRunners stay waiting afterwards.
func TestRunnersReuseAndBoundIdleGoroutines(t *testing.T) {
	var r runners
	waitIdle := func(n int32) {
		for r.idle.Load() < n {
			runtime.Gosched()
		}
	}
	for i := range 50 {
		done := make(chan struct{})
		r.run(func() { close(done) })
		<-done
		waitIdle(1)
		if got := r.idle.Load(); got != 1 {
			t.Fatalf("%d idle runners after %d sequential runs, want 1 (a run did not reuse the idle one)", got, i+1)
		}
	}

	const n = 3 * maxIdleRunners
	release := make(chan struct{})
	var started, finished sync.WaitGroup
	started.Add(n)
	finished.Add(n)
	for range n {
		r.run(func() {
			defer finished.Done()
			started.Done()
			<-release // every run is in flight at once
		})
	}
	started.Wait()
	close(release)
	finished.Wait()
	waitIdle(maxIdleRunners)
	if got := r.idle.Load(); got != maxIdleRunners {
		t.Errorf("%d idle runners after %d concurrent runs, want %d", got, n, maxIdleRunners)
	}
}
