package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

// observedStore is a real Redis store that tells the test when a read of
// every record starts and whether it has returned.
type observedStore struct {
	*state.Hash
	reading, deleting chan struct{}
	returned          atomic.Bool
}

func (o *observedStore) started() {
	o.returned.Store(false)
	select {
	case o.reading <- struct{}{}:
	default:
	}
}

func (o *observedStore) All(ctx context.Context) (map[string][]byte, error) {
	o.started()
	defer o.returned.Store(true)
	return o.Hash.All(ctx)
}

func (o *observedStore) Delete(ctx context.Context, name string) error {
	o.returned.Store(false)
	o.deleting <- struct{}{}
	defer o.returned.Store(true)
	return o.Hash.Delete(ctx, name)
}

func (o *observedStore) AllWithEpoch(ctx context.Context) (map[string][]byte, string, error) {
	o.started()
	defer o.returned.Store(true)
	return o.Hash.AllWithEpoch(ctx)
}

// While Redis does not answer (its process stopped: reads block until
// their timeout), a sync waiting for it holds nothing local: the catalog's
// drift report and a backend refresh return at once.
func TestSyncReadsTheStoreWithoutTheLock(t *testing.T) {
	srv := redistest.Start(t)
	r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	store := &observedStore{Hash: r.Hash("registrations"), reading: make(chan struct{}, 1)}
	c, _ := replica(t, t.Context(), store, "127.0.0.1")
	srv.Pause()
	defer srv.Resume()
	select {
	case <-store.reading: // a read that started before the pause
	default:
	}
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		c.sync(t.Context())
	}()
	<-store.reading // one that started after: it blocks
	c.Drifts()
	_ = c.Refresh(t.Context(), "unknown")
	if store.returned.Load() {
		t.Error("Drifts and Refresh returned only after the store read did: the sync held the catalog's lock across it")
	}
	srv.Resume()
	<-synced
}

// A deregistration waiting for a Redis that does not answer holds nothing
// local either.
func TestDeregisterWritesTheStoreWithoutTheLock(t *testing.T) {
	srv := redistest.Start(t)
	target := mcpServer(t)
	r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	store := &observedStore{Hash: r.Hash("registrations"), reading: make(chan struct{}, 1), deleting: make(chan struct{}, 1)}
	c, _ := replica(t, t.Context(), store, strings.TrimPrefix(target.URL, "http://"))
	if _, err := c.Register(t.Context(), "probe", json.RawMessage(`{"transport":"http","url":"`+target.URL+`/mcp"}`)); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	done := make(chan error, 1)
	go func() { done <- c.Deregister("probe") }()
	<-store.deleting
	c.Drifts()
	if store.returned.Load() {
		t.Error("Drifts returned only after the store operation did: the catalog's lock was held across it")
	}
	srv.Resume()
	if err := <-done; err != nil {
		t.Logf("Deregister after the pause: %v", err)
	}
}

// A Redis restarted without persistence comes back empty: each replica
// publishes the registrations it serves again, keeps serving them, and
// logs that the shared state was lost, not that another replica removed
// them. A registration another replica deregistered before is not
// brought back.
func TestFollowRepublishesAfterTheStoreLostItsRecords(t *testing.T) {
	srv := redistest.StartTCP(t)
	target := mcpServer(t)
	host := strings.TrimPrefix(target.URL, "http://")
	open := func() *state.Hash {
		r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r.Hash("registrations")
	}
	var aLog, bLog lockedLog
	a, aChanged := replicaLogged(t, t.Context(), open(), host, slog.New(slog.NewTextHandler(&aLog, nil)))
	b, bChanged := replicaLogged(t, t.Context(), open(), host, slog.New(slog.NewTextHandler(&bLog, nil)))
	def := json.RawMessage(`{"transport":"http","url":"` + target.URL + `/mcp"}`)
	for _, name := range []string{"kept", "removed"} {
		if _, err := a.Register(t.Context(), name, def); err != nil {
			t.Fatal(err)
		}
	}
	within(t, bChanged, 5*time.Second, "b lists both", func() bool {
		return slices.Contains(b.opts.Registry.BackendNames(), "kept") && slices.Contains(b.opts.Registry.BackendNames(), "removed")
	})
	if err := b.Deregister("removed"); err != nil {
		t.Fatal(err)
	}
	within(t, aChanged, 5*time.Second, "a drops removed", func() bool { return !slices.Contains(a.opts.Registry.BackendNames(), "removed") })

	srv.Restart(t)
	h := open()
	notices := make(chan struct{}, 1)
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	go h.Watch(wctx, 500*time.Millisecond, func() {
		select {
		case notices <- struct{}{}:
		default:
		}
	})
	// Both replicas have seen the loss (each logs it at its first sync
	// after the restart: on resubscribing, or within followResync).
	lost := "the shared state lost every registration"
	deadline := time.After(20 * time.Second)
	for {
		recs, err := h.All(t.Context())
		if err == nil && recs["kept"] != nil && strings.Contains(aLog.String(), lost) && strings.Contains(bLog.String(), lost) {
			if recs["removed"] != nil {
				t.Error("the deregistered backend was published again")
			}
			break
		}
		select {
		case <-notices:
		case <-deadline:
			t.Fatalf("within 20s of the restart: records %v (%v); want kept published again and both replicas to log the loss:\na: %s\nb: %s", recs, err, aLog.String(), bLog.String())
		}
	}
	for name, c := range map[string]*Catalog{"a": a, "b": b} {
		if !slices.Contains(c.opts.Registry.BackendNames(), "kept") {
			t.Errorf("%s no longer serves kept", name)
		}
		if slices.Contains(c.opts.Registry.BackendNames(), "removed") {
			t.Errorf("%s serves removed again", name)
		}
	}
	for name, l := range map[string]*lockedLog{"a": &aLog, "b": &bLog} {
		out := l.String()
		if strings.Contains(out, `"backend deregistered by another replica" backend=kept`) {
			t.Errorf("%s's log blames another replica for kept:\n%s", name, out)
		}
	}
}

// lockedLog is a log destination written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
