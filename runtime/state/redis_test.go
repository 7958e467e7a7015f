package state_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

func open(t *testing.T, url string) *state.Redis {
	t.Helper()
	r, err := state.Open(t.Context(), url, 5*time.Second, state.Options{Probe: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestHashSharedBetweenClients(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL).Hash("registrations"), open(t, srv.URL).Hash("registrations")
	ctx := t.Context()

	changed := make(chan struct{}, 16)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Watch(wctx, time.Hour, func() { changed <- struct{}{} })
	await(t, changed, "the first subscription") // (re)subscribing resynchronises

	if ok, err := a.Create(ctx, "x", []byte("one")); err != nil || !ok {
		t.Fatalf("Create = %v, %v; want true", ok, err)
	}
	await(t, changed, "a notice of the creation")
	if ok, err := b.Create(ctx, "x", []byte("two")); err != nil || ok {
		t.Fatalf("second Create of the same field = %v, %v; want false", ok, err)
	}
	got, err := b.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"x": []byte("one")}, got); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	if err := b.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Get(ctx, "x"); err != nil || v != nil {
		t.Errorf("Get after Delete = %q, %v; want nil", v, err)
	}
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no call for %s within 5s", what)
	}
}

// Update's lock makes read-modify-write safe across processes: two
// clients incrementing one record 50 times each end at 100.
func TestUpdateSerialisesReplicas(t *testing.T) {
	srv := redistest.Start(t)
	hs := []*state.Hash{open(t, srv.URL).Hash("oauth"), open(t, srv.URL).Hash("oauth")}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, h := range hs {
		wg.Go(func() {
			for range 50 {
				errs <- h.Update(t.Context(), "tracker", 10*time.Second, func(cur []byte) ([]byte, error) {
					var n int
					if cur != nil {
						fmt.Sscan(string(cur), &n)
					}
					return fmt.Appendf(nil, "%d", n+1), nil
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := hs[0].Get(t.Context(), "tracker"); string(v) != "100" {
		t.Errorf("after 100 locked increments the record is %q; want 100", v)
	}
	// nil from fn deletes.
	if err := hs[1].Update(t.Context(), "tracker", time.Second, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if f, _ := hs[0].Fields(t.Context()); len(f) != 0 {
		t.Errorf("fields after a deleting Update: %v", f)
	}
}

func TestCountersAdd(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL).Counters("usage"), open(t, srv.URL).Counters("usage")
	if _, err := a.Add(t.Context(), map[string]uint64{"everything.echo": 2}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Add(t.Context(), map[string]uint64{"everything.echo": 1, "memory.read_graph": 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint64{"everything.echo": 3, "memory.read_graph": 4}, got); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

// Redis that is down at start is an error naming the key and the fix;
// one that goes down later turns operations into ErrUnavailable.
func TestOutages(t *testing.T) {
	srv := redistest.Start(t)
	r := open(t, srv.URL)
	if err := r.Err(); err != nil {
		t.Errorf("Err with Redis up: %v", err)
	}
	srv.Stop()
	_, err := r.Hash("registrations").All(t.Context())
	if !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("All with Redis stopped: %v; want ErrUnavailable", err)
	}
	for r.Err() == nil { // the monitor probes every 100ms here
		select {
		case <-t.Context().Done():
			t.Fatal("the monitor never noticed Redis was gone")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !errors.Is(r.Err(), state.ErrUnavailable) || !strings.Contains(r.Err().Error(), srv.Addr) {
		t.Errorf("Err with Redis stopped: %v; want ErrUnavailable naming %s", r.Err(), srv.Addr)
	}
	_, err = state.Open(t.Context(), srv.URL, 500*time.Millisecond, state.Options{})
	if err == nil || !strings.Contains(err.Error(), "gateway.state_url: Redis at") || !strings.Contains(err.Error(), "does not fall back to gateway.state_dir") {
		t.Errorf("Open with Redis stopped: %v; want an error naming the key and the fix", err)
	}
	_, err = state.Open(t.Context(), "redis://:hunter2@127.0.0.1:1/x", time.Second, state.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open of a bad URL with a password: %v; want an error without the password", err)
	}
}

// TestUpdateWritesOnlyWhileHoldingTheLock: what fn returns is stored even
// when the caller's wait deadline passed while fn ran (fn may have spent a
// rotating refresh token), and never once the lease ran out and another
// replica took the lock: that holder's write stands.
func TestUpdateWritesOnlyWhileHoldingTheLock(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv.URL).Hash("oauth"), open(t, srv.URL).Hash("oauth")

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := a.Update(ctx, "late", 10*time.Second, func([]byte) ([]byte, error) {
		<-ctx.Done() // the token endpoint answers after the wait's deadline
		return []byte("new"), nil
	})
	if got, _ := a.Get(t.Context(), "late"); err != nil || string(got) != "new" {
		t.Errorf("Update past the wait deadline: err %v, stored %q; want nil and %q", err, got, "new")
	}

	if err := a.Put(t.Context(), "b", []byte("v0")); err != nil {
		t.Fatal(err)
	}
	bDone := make(chan error, 1)
	aErr := a.Update(t.Context(), "b", 200*time.Millisecond, func(cur []byte) ([]byte, error) {
		// While a holds the lock past its lease, b takes it and writes.
		go func() {
			bDone <- b.Update(t.Context(), "b", 10*time.Second, func(cur []byte) ([]byte, error) {
				return []byte("B-from-" + string(cur)), nil
			})
		}()
		if err := <-bDone; err != nil {
			return nil, err
		}
		return []byte("A-from-" + string(cur)), nil
	})
	if aErr == nil || !strings.Contains(aErr.Error(), "nothing was written") {
		t.Errorf("the holder past its lease: %v; want a refusal saying nothing was written", aErr)
	}
	if got, _ := a.Get(t.Context(), "b"); string(got) != "B-from-v0" {
		t.Errorf("stored %q; want the next holder's B-from-v0", got)
	}
}

// A hash's epoch stays while Redis keeps its data, whatever replicas
// write or delete, and changes when a restart without persistence lost it.
func TestEpochChangesOnlyWhenTheDataIsLost(t *testing.T) {
	srv := redistest.StartTCP(t)
	h := open(t, srv.URL).Hash("registrations")
	ctx := t.Context()
	read := func() (map[string][]byte, string) {
		t.Helper()
		recs, epoch, err := h.AllWithEpoch(ctx)
		if err != nil || epoch == "" {
			t.Fatalf("AllWithEpoch = %v, %q, %v", recs, epoch, err)
		}
		return recs, epoch
	}
	_, first := read()
	if ok, err := h.Create(ctx, "x", []byte("one")); !ok || err != nil {
		t.Fatalf("Create = %v, %v", ok, err)
	}
	if err := h.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if ok, err := h.Create(ctx, "y", []byte("two")); !ok || err != nil {
		t.Fatalf("Create = %v, %v", ok, err)
	}
	recs, again := read()
	if again != first {
		t.Errorf("epoch changed from %q to %q after writes and deletes", first, again)
	}
	if diff := cmp.Diff(map[string][]byte{"y": []byte("two")}, recs); diff != "" {
		t.Errorf("AllWithEpoch records (-want +got):\n%s", diff)
	}
	srv.Restart(t)
	var recsAfter map[string][]byte
	var after string
	for range 50 { // the client reconnects on its next command
		var err error
		if recsAfter, after, err = h.AllWithEpoch(ctx); err == nil {
			break
		}
	}
	if after == "" || after == first || len(recsAfter) != 0 {
		t.Errorf("after a restart without persistence: epoch %q (was %q), records %v; want a new epoch and none", after, first, recsAfter)
	}
}
