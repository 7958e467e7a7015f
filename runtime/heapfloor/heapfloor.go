// Package heapfloor gives a small heap room to grow before the garbage
// collector runs. Go collects when the heap reaches twice its live size,
// and at least 4 MB: kiln serving a typical fleet keeps about 2 MB live,
// so it collected every 250 or so tool calls, ~3.5 ms of CPU each time,
// about 14 µs of every call (BenchmarkEchoHop with GODEBUG=gctrace=1: 26
// collections in 5,000 tier-1 calls). With at least Floor of headroom it
// collects about a tenth as often; a heap already larger than Floor keeps
// Go's own pace, so a big fleet does not hold several times its size.
//
// kiln serve starts it over HTTP and as the daemon, where calls keep the
// processors busy (at 16 HTTP sessions it saved 7–21% of kiln's CPU per
// call). Serving one stdio client it does not: there kiln idles between
// calls and collects in that idle time, and a 4 MB heap stays in the
// caches where an 18 MB one does not (a tier-1 call: ~45 µs of CPU and
// ~50 µs of latency less without the floor, make bench-hop).
package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Floor is the headroom a small heap gets: the heap may grow by this much
// over its live size before a collection.
const Floor = 16 << 20

// Percent is the GOGC that gives a heap of live bytes Floor of headroom,
// and never less than Go's default of 100.
func Percent(live uint64) int {
	live = max(live, 1<<20)
	return max(int(Floor*100/live), 100)
}

// Start sets GOGC from the live heap now and again after every collection,
// so the pace follows the heap as backends register or leave. GOGC set in
// the environment (even to its default) is the operator's choice: Start
// leaves it alone.
// Calls after the first that started the tuner do nothing: one tuner
// serves the process.
func Start() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	once.Do(func() {
		t := &tuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		t.adjust()
		t.arm()
	})
}

var once sync.Once

type tuner struct {
	sample  []metrics.Sample
	percent int
}

// arm runs adjust once the next collection has found a fresh object
// unreachable, that is after every collection, for as long as the process
// lives.
func (t *tuner) arm() {
	// Larger than the tiny allocator's 16 bytes: a cleanup on a tiny
	// object may never run.
	runtime.AddCleanup(new([64]byte), func(t *tuner) {
		t.adjust()
		t.arm()
	}, t)
}

func (t *tuner) adjust() {
	metrics.Read(t.sample)
	live := uint64(0)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	if p := Percent(live); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}
