package sandbox

import (
	"log/slog"
	"runtime/metrics"
	"sync"
	"time"
)

// watchdogInterval is how often the heap is sampled while runs are active.
// Reading one runtime/metrics sample costs about a microsecond.
const watchdogInterval = 5 * time.Millisecond

const liveHeapMetric = "/gc/heap/live:bytes"

// watchdog enforces the per-run heap budget. goja has no heap accounting
// and Go none per goroutine, so it watches the process: the live heap may
// grow by budget × active runs over the live heap measured while no run
// was active. Past that, the runs executing JavaScript at that moment are
// interrupted — a run parked in await is not allocating. The live heap is
// measured at each GC, which the growth itself triggers, so detection lags
// by at most one GC cycle (about a doubling of the heap).
type watchdog struct {
	budget uint64
	log    *slog.Logger

	mu       sync.Mutex
	runs     map[*run]struct{}
	baseline uint64
	active   bool
}

func newWatchdog(budget uint64, log *slog.Logger) *watchdog {
	return &watchdog{budget: budget, log: log, runs: map[*run]struct{}{}, baseline: liveHeap()}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: liveHeapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func (w *watchdog) add(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) == 0 {
		w.baseline = liveHeap()
	}
	w.runs[r] = struct{}{}
	if !w.active {
		w.active = true
		go w.watch()
	}
}

func (w *watchdog) remove(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.runs, r)
}

func (w *watchdog) watch() {
	t := time.NewTicker(watchdogInterval)
	defer t.Stop()
	for range t.C {
		if !w.check() {
			return
		}
	}
}

// check samples the heap once; it reports false when no run is left.
func (w *watchdog) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) == 0 {
		w.active = false
		return false
	}
	live := liveHeap()
	limit := w.baseline + w.budget*uint64(len(w.runs))
	if live <= limit {
		return true
	}
	for r := range w.runs {
		if r.inJS.Load() {
			w.log.Warn("sandbox run over its memory budget; interrupting", "live_heap", live, "limit", limit, "runs", len(w.runs))
			r.kill(ErrMemory)
			delete(w.runs, r)
		}
	}
	return len(w.runs) > 0 || w.stop()
}

func (w *watchdog) stop() bool {
	w.active = false
	return false
}
