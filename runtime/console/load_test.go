package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/audit"
)

// openStreams opens n /api/v1/events streams on r, each read to the end
// in its own goroutine; counts has how many events each read.
func openStreams(t testing.TB, r *rig, n int) (cancel func(), counts []atomic.Int64, wg *sync.WaitGroup) {
	ctx, stop := context.WithCancel(context.Background())
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	cancel = func() { stop(); tr.CloseIdleConnections() }
	counts = make([]atomic.Int64, n)
	wg = &sync.WaitGroup{}
	for i := range n {
		req, _ := http.NewRequestWithContext(ctx, "GET", r.srv.URL+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer api-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					counts[i].Add(1)
				}
			}
		})
	}
	for r.c.Subscribers() < n {
		time.Sleep(time.Millisecond)
	}
	return cancel, counts, wg
}

// TestFiftySubscribersLeaveNothing: 50 streams follow 1,000 events, and
// once they disconnect no goroutine of theirs is left.
func TestFiftySubscribersLeaveNothing(t *testing.T) {
	r := newRig(t)
	before := runtime.NumGoroutine()
	cancel, counts, wg := openStreams(t, r, 50)
	for i := range 1000 {
		r.c.Publish(Event{Kind: "call", Tool: "b.t", MS: float64(i)})
		if i%100 == 99 {
			time.Sleep(5 * time.Millisecond) // a load, not a burst past every buffer
		}
	}
	// Each stream sees every event, or was dropped for falling behind
	// (a browser then resumes from the ring with Last-Event-ID); wait
	// until the reading stops.
	deadline := time.Now().Add(10 * time.Second)
	last := -1
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		sum := 0
		for i := range counts {
			sum += int(counts[i].Load())
		}
		if sum == last {
			break
		}
		last = sum
	}
	t.Logf("events read by 50 streams: %d of %d", last, 50*1000)
	if last < 1000 {
		t.Errorf("the streams read %d events in all", last)
	}
	cancel()
	wg.Wait()
	r.srv.CloseClientConnections()
	for time.Now().Before(deadline) && (r.c.Subscribers() > 0 || runtime.NumGoroutine() > before+2) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.c.Subscribers(); n != 0 {
		t.Errorf("%d subscriptions left after every stream closed", n)
	}
	if g := runtime.NumGoroutine(); g > before+2 {
		t.Errorf("%d goroutines after the streams closed, %d before", g, before)
	}
}

// BenchmarkCallWithSubscribers is a tool call through the console's feed
// (an audit log with no file whose writer publishes each record) with no
// stream open and with 50 /api/v1/events streams reading over HTTP: the
// issue's "50 subscribers while calls run", side by side. The call
// itself is a stand-in answering at once, so what differs is kiln's.
// streams_kept reports how many of the 50 kept up to the end.
func BenchmarkCallWithSubscribers(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run("subscribers"+strconv.Itoa(n), func(b *testing.B) {
			r := newRig(b)
			feed, err := audit.Open(audit.Options{FlushEvery: 20 * time.Millisecond, Sinks: []audit.Sink{{Emit: func(rec audit.Record) {
				r.c.Publish(Event{Kind: rec.Event, Tool: rec.Tool, Outcome: rec.Outcome, MS: rec.DurationMS})
			}}}})
			if err != nil {
				b.Fatal(err)
			}
			caller := feed.Caller(bash{}, nil)
			cancel, _, wg := openStreams(b, r, n)
			args := json.RawMessage(`{"command":"true"}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := caller.CallTool(ctx, "ws", "Bash", args); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			feed.Close()
			b.ReportMetric(float64(r.c.Subscribers()), "streams_kept")
			cancel()
			wg.Wait()
		})
	}
}

// BenchmarkPublish is the cost of one event reaching the live log with no
// subscriber and with 50 streams reading over HTTP: what each tool call
// adds on the audit writer's goroutine when the console is on.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run("subscribers"+strconv.Itoa(n), func(b *testing.B) {
			r := newRig(b)
			cancel, _, wg := openStreams(b, r, n)
			b.ReportAllocs()
			for b.Loop() {
				r.c.Publish(Event{Kind: "call", Tool: "b.t", Outcome: "ok"})
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}
