package usecount_test

import (
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/state"
	"github.com/kilnmcp/kiln/runtime/state/redistest"
	"github.com/kilnmcp/kiln/runtime/usecount"
)

// Two replicas sharing Redis: each Save sends its new uses and takes the
// fleet's totals back, so both rank with every replica's counts; a Save
// while Redis is down fails and keeps the uses for later.
func TestSharedUsage(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *usecount.Counts {
		r, err := state.Open(t.Context(), srv.URL, 5*time.Second, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		u, err := usecount.OpenShared(t.Context(), r.Counters("usage"))
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	a, b := open(), open()
	a.Record("everything.echo")
	a.Record("everything.echo")
	b.Record("everything.echo")
	b.Record("memory.read_graph")
	for _, u := range []*usecount.Counts{a, b, a} {
		if err := u.Save(); err != nil {
			t.Fatal(err)
		}
	}
	for name, u := range map[string]*usecount.Counts{"a": a, "b": b} {
		if got := u.Count("everything.echo"); got != 3 {
			t.Errorf("%s counts everything.echo %d times; want 3 (both replicas' uses)", name, got)
		}
		if got := u.Count("memory.read_graph"); got != 1 {
			t.Errorf("%s counts memory.read_graph %d times; want 1", name, got)
		}
	}
	if late := open(); late.Count("everything.echo") != 3 {
		t.Errorf("a replica started later counts %d; want 3", late.Count("everything.echo"))
	}
	srv.Stop()
	a.Record("everything.echo")
	if err := a.Save(); err == nil {
		t.Error("Save with Redis down succeeded")
	}
	if got := a.Count("everything.echo"); got != 4 {
		t.Errorf("after a failed Save the local count is %d; want 4 (the new use kept)", got)
	}
}
