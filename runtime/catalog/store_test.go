package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

// The two stores honour one contract: records round-trip, Create does not
// replace, Delete of a missing name is fine.
func TestStoreContract(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"file": func(t *testing.T) Store { return NewFileStore(filepath.Join(t.TempDir(), RegistrationsFile)) },
		"redis": func(t *testing.T) Store {
			r, err := state.Open(t.Context(), redistest.Start(t).URL, 5*time.Second, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r.Hash("registrations")
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s, ctx := open(t), t.Context()
			if all, err := s.All(ctx); err != nil || len(all) != 0 {
				t.Fatalf("empty store: %v, %v", all, err)
			}
			for _, n := range []string{"b", "a"} {
				if ok, err := s.Create(ctx, n, []byte(`{"name":"`+n+`"}`)); !ok || err != nil {
					t.Fatalf("Create %s = %v, %v", n, ok, err)
				}
			}
			if ok, err := s.Create(ctx, "a", []byte(`{"name":"a","x":1}`)); ok || err != nil {
				t.Errorf("Create over a record = %v, %v; want false, nil", ok, err)
			}
			if err := s.Delete(ctx, "b"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "missing"); err != nil {
				t.Errorf("Delete of a missing name: %v", err)
			}
			all, err := s.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 1 || string(all["a"]) != `{"name":"a"}` {
				t.Errorf("All = %q; want only a's first record", all)
			}
		})
	}
}

// replica is a catalog over a real dispatcher sharing store with others.
func replica(t *testing.T, ctx context.Context, store Store, allow string) (*Catalog, <-chan struct{}) {
	t.Helper()
	return replicaLogged(t, ctx, store, allow, slog.New(slog.DiscardHandler))
}

// replicaLogged is replica with its log.
func replicaLogged(t *testing.T, ctx context.Context, store Store, allow string, log *slog.Logger) (*Catalog, <-chan struct{}) {
	t.Helper()
	gw := config.DefaultGateway()
	gw.ConnectTimeout = 5 * time.Second
	r, err := config.ParseHostRule(allow)
	if err != nil {
		t.Fatal(err)
	}
	gw.Registration.AllowHosts = []config.HostRule{r}
	cfg := &config.Config{Version: 1, Dir: t.TempDir(), Gateway: gw}
	reg := registry.New()
	disp := dispatch.New(reg, cfg, dispatch.Options{Logger: log, Self: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}})
	disp.Start(ctx)
	t.Cleanup(func() { disp.Close() })
	changed := make(chan struct{}, 1)
	c := New(Options{Registry: reg, Backends: disp, Config: cfg, Search: Lexical(search.Build(nil)), Logger: log, Store: store,
		OnChange: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	c.Restore(ctx)
	c.Follow(ctx)
	return c, changed
}

// A backend registered on one replica is listed and callable on another
// within a second, and deregistering it anywhere removes it everywhere; a
// replica started later loads it; the same name cannot be registered twice
// across replicas.
func TestFollowSharesRegistrations(t *testing.T) {
	srv := redistest.Start(t)
	target := mcpServer(t)
	host := strings.TrimPrefix(target.URL, "http://")
	open := func() Store {
		r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r.Hash("registrations")
	}
	a, aChanged := replica(t, t.Context(), open(), host)
	b, bChanged := replica(t, t.Context(), open(), host)
	def := json.RawMessage(`{"transport":"http","url":"` + target.URL + `/mcp"}`)
	if _, err := a.Register(t.Context(), "probe", def); err != nil {
		t.Fatal(err)
	}
	within(t, bChanged, time.Second, "b lists probe", func() bool { return slices.Contains(b.opts.Registry.BackendNames(), "probe") })
	if !slices.Contains(a.opts.Registry.BackendNames(), "probe") {
		t.Error("a dropped its own registration after the store's notice of it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if tools, err := b.opts.Backends.Tools(ctx, "probe"); err != nil || len(tools) != 1 {
		t.Errorf("b's probe tools = %v, %v", tools, err)
	}
	if _, err := b.Register(t.Context(), "probe", def); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering probe again on b: %v; want already registered", err)
	}

	late, lateChanged := replica(t, t.Context(), open(), host)
	if !slices.Contains(late.opts.Registry.BackendNames(), "probe") {
		t.Error("a replica started later does not list probe")
	}
	if err := b.Deregister("probe"); err != nil {
		t.Fatal(err)
	}
	within(t, aChanged, time.Second, "a drops probe", func() bool { return !slices.Contains(a.opts.Registry.BackendNames(), "probe") })
	within(t, lateChanged, time.Second, "late drops probe", func() bool { return !slices.Contains(late.opts.Registry.BackendNames(), "probe") })
}

// A shared store that is down refuses changes with a clear error instead
// of letting replicas disagree.
func TestStoreDownRefusesChanges(t *testing.T) {
	srv := redistest.Start(t)
	target := mcpServer(t)
	r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	a, _ := replica(t, t.Context(), r.Hash("registrations"), strings.TrimPrefix(target.URL, "http://"))
	srv.Stop()
	_, err = a.Register(t.Context(), "probe", json.RawMessage(`{"transport":"http","url":"`+target.URL+`/mcp"}`))
	if err == nil || !strings.Contains(err.Error(), "could not save the registration") {
		t.Fatalf("Register with the store down: %v", err)
	}
	if names := a.opts.Registry.BackendNames(); len(names) != 0 {
		t.Errorf("registered although not saved: %v", names)
	}
}

// within waits until ok holds, checking it after each catalog change,
// for at most d.
func within(t *testing.T, changed <-chan struct{}, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.After(d)
	for !ok() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// Two replicas registering one name at once: the store's atomic Create
// lets one win; the other, whose backend connected meanwhile, refuses and
// stops it. A record this replica cannot use (here malformed) stands for
// the winner's, not yet followed.
func TestRegisterLosesRaceToAnotherReplica(t *testing.T) {
	srv := redistest.Start(t)
	target := mcpServer(t)
	r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h := r.Hash("registrations")
	if _, err := h.Create(t.Context(), "probe", []byte(`{"name":"probe"}`)); err != nil {
		t.Fatal(err)
	}
	a, _ := replica(t, t.Context(), h, strings.TrimPrefix(target.URL, "http://"))
	_, err = a.Register(t.Context(), "probe", json.RawMessage(`{"transport":"http","url":"`+target.URL+`/mcp"}`))
	if err == nil || !strings.Contains(err.Error(), "registered meanwhile by another kiln replica") {
		t.Fatalf("Register of a name another replica holds: %v", err)
	}
	if names := a.opts.Registry.BackendNames(); len(names) != 0 {
		t.Errorf("listed after losing the race: %v", names)
	}
}

// A registration another replica redefined (deregistered and registered
// again with another URL) between two syncs is served with its new
// definition after one sync pass: dropping the old backend frees its name
// before the new one is added.
func TestRedefinitionSeenInOneSync(t *testing.T) {
	srv := redistest.Start(t)
	first, second := mcpServer(t), mcpServer(t)
	r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	h := r.Hash("registrations")
	a, _ := replica(t, t.Context(), h, "127.0.0.1")
	for i := range 10 {
		name := fmt.Sprintf("probe%d", i)
		if _, err := a.Register(t.Context(), name, json.RawMessage(`{"transport":"http","url":"`+first.URL+`/mcp"}`)); err != nil {
			t.Fatal(err)
		}
		all, err := h.All(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		redefined := []byte(strings.ReplaceAll(string(all[name]), first.URL, second.URL))
		if err := h.Delete(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		if ok, err := h.Create(t.Context(), name, redefined); !ok || err != nil {
			t.Fatalf("Create: %v, %v", ok, err)
		}
		a.sync(t.Context())
		var served string
		for _, st := range a.opts.Backends.Status() {
			if st.Name == name {
				served = st.Name
			}
		}
		if served == "" || !slices.Contains(a.opts.Registry.BackendNames(), name) {
			t.Fatalf("after one sync %s is listed %v, served by the dispatcher %v; want both", name,
				slices.Contains(a.opts.Registry.BackendNames(), name), served != "")
		}
		a.mu.Lock()
		def := string(a.dynamic[name])
		a.mu.Unlock()
		if !strings.Contains(def, second.URL) {
			t.Fatalf("%s is defined as %s; want the new definition's %s", name, def, second.URL)
		}
	}
}
