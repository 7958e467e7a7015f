package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 1600},       // no collection yet: read as 1 MB
		{2 << 20, 800},  // a typical fleet: 16 MB of room
		{16 << 20, 100}, // from Floor up, Go's own pace
		{200 << 20, 100},
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d MB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestStartFollowsCollections: with GOGC set, Start leaves the pace as
// the environment said; unset, it raises the pace for this small test
// heap, lowers it to Go's own once 40 MB are live, and raises it again
// when they are gone.
func TestStartFollowsCollections(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	if v, set := os.LookupEnv("GOGC"); set {
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	os.Setenv("GOGC", "100")
	Start()
	runtime.GC()
	if got := pace(); got != 100 {
		t.Fatalf("with GOGC set, Start changed the pace to %d", got)
	}
	os.Unsetenv("GOGC")
	Start()
	if got := pace(); got <= 100 {
		t.Fatalf("GOGC unset: the pace is %d, want it raised for a heap of a few MB", got)
	}
	big := make([][]byte, 40)
	for i := range big {
		big[i] = make([]byte, 1<<20)
	}
	waitPace(t, func(p int) bool { return p == 100 }, "Go's own 100 with 40 MB live")
	runtime.KeepAlive(big)
	big = nil
	waitPace(t, func(p int) bool { return p > 100 }, "raised again once the 40 MB are gone")
}

// pace reads GOGC.
func pace() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// waitPace collects until the pace satisfies ok: the tuner adjusts on the
// cleanup goroutine after a collection.
func waitPace(t *testing.T, ok func(int) bool, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		p := pace()
		if ok(p) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pace is %d, want %s", p, want)
		}
	}
}
