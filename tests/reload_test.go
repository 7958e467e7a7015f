//go:build e2e

package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDriftAndHotReload points the compiled backend "memory" at the fault
// server: its live tools differ from the compiled manifest, so kiln serves
// the live list (drift: warn) and reports the drift. Then kiln.yaml is edited while kiln
// runs: a new timeout applies without a restart, an invalid edit is
// rejected with a log line, and disabling the backend takes effect.
func TestDriftAndHotReload(t *testing.T) {
	state := t.TempDir()
	cfg := func(timeout, enabled string) string {
		return fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 10s
  drift: warn                # this test is about serving the live list
backends:
  memory:
    command: %s
    env: {FAULT_STATE_DIR: %s}
    timeout: %s
    enabled: %s
`, t.TempDir(), faultBin(t), state, timeout, enabled)
	}
	k := startFaultKilnWith(t, cfg("30s", "true"))

	// Drift: the live tools replace the compiled memory tools.
	eventually(t, "kiln reports memory's drift", func() bool {
		return strings.Contains(k.resource("kiln://backends"), `"drift"`)
	})
	if !k.logged("drifted from the compiled manifest") {
		t.Error("no drift log line")
	}
	if r := k.chain(t.Context(), `await memory.echo({text: "live list"})`); r.IsError || !strings.Contains(r.Text(), "live list") {
		t.Fatalf("calling a live-only tool: %s", r.Text())
	}
	if r := k.call(t.Context(), "search_tools", map[string]any{"task_description": "hang until canceled"}, nil); !strings.Contains(r.Text(), "memory.hang") {
		t.Errorf("search does not find the live tool: %s", r.Text())
	}
	if r := k.chain(t.Context(), `{"tool":"memory.read_graph"}`); !r.IsError {
		t.Errorf("a compiled tool the live backend lacks still answers: %s", r.Text())
	}
	pid := pidIn(t, state)

	// A timeout edit applies in place.
	if err := os.WriteFile(k.config, []byte(cfg("1s", "true")), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload is logged", func() bool { return k.logged("config reloaded") })
	r := k.chain(t.Context(), `{"tool":"memory.hang"}`)
	if !r.IsError || !strings.Contains(r.Text(), "did not answer within 1s") {
		t.Fatalf("hang after timeout edit: %s", r.Text())
	}
	if got := pidIn(t, state); got != pid {
		t.Errorf("a timeout edit restarted the backend (pid %d -> %d)", pid, got)
	}

	// An invalid edit is rejected; the old config keeps serving.
	if err := os.WriteFile(k.config, []byte(cfg("soon", "true")), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rejection is logged", func() bool { return k.logged("config edit rejected") })
	if !k.logged("backends.memory.timeout") {
		t.Error("the rejection does not name the bad key")
	}
	if r := k.chain(t.Context(), `await memory.echo({text: "still"})`); r.IsError {
		t.Errorf("after an invalid edit: %s", r.Text())
	}

	// Disabling applies too.
	if err := os.WriteFile(k.config, []byte(cfg("1s", "false")), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "memory disabled", func() bool {
		r := k.chain(t.Context(), `{"tool":"memory.echo","arguments":{"text":"x"}}`)
		return r.IsError && strings.Contains(r.Text(), "disabled")
	})
}

// TestRegistrationsPersist restarts kiln with gateway.registration.persist
// on: a backend registered in the first run is back in the second, and one
// deregistered is not. The kept backend takes 4 s to start, so the second
// run shows it listed and searchable from its last known tools before it
// connects, and its first call waiting for it rather than failing.
func TestRegistrationsPersist(t *testing.T) {
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  registration:
    allow_commands: [%s]
    persist: true
backends: {}
`, t.TempDir(), faultBin(t))
	first := startFaultKilnWith(t, cfg)
	for _, name := range []string{"kept", "dropped"} {
		if _, r := first.register(name, map[string]string{"FAULT_START_DELAY": "4s"}, nil); r.IsError {
			t.Fatal(r.Text())
		}
	}
	if r := first.call(t.Context(), "deregister_manual", map[string]any{"manual_name": "dropped"}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	first.c.Close()

	second := startFaultKilnWith(t, cfg)
	if r := second.call(t.Context(), "search_tools", map[string]any{"task_description": "echo text back"}, nil); r.IsError || !strings.Contains(r.Text(), "kept.echo") {
		t.Errorf("restored backend not searchable at start: %s", r.Text())
	}
	if st := second.resource("kiln://backend/kept"); !strings.Contains(st, "starting") {
		t.Errorf("restored backend should still be connecting at this point: %s", st)
	}
	if r := second.chain(t.Context(), `await kept.echo({text: "restored"})`); r.IsError || !strings.Contains(r.Text(), "restored") {
		t.Errorf("first call to a restored backend: %s", r.Text())
	}
	if r := second.chain(t.Context(), `{"tool":"dropped.echo","arguments":{"text":"x"}}`); !r.IsError {
		t.Errorf("a deregistered backend came back: %s", r.Text())
	}
}
