//go:build e2e

package tests

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHTTPStreamResumesAfterCut: the fault server resets the connection of
// a call's SSE response stream right after its first event, mid-call, and
// keeps the result in its event store. kiln reconnects with a GET carrying
// Last-Event-ID, gets the replayed result, and the call succeeds without
// being sent twice.
func TestHTTPStreamResumesAfterCut(t *testing.T) {
	dir := t.TempDir()
	u := startFaultHTTPServer(t, "--state-dir", dir, "--cut-stream", "slow")
	k := startFaultKiln(t, "")
	var tpl map[string]any
	raw, _ := json.Marshal(map[string]any{"name": "web", "transport": "http", "url": u, "timeout": "30s"})
	_ = json.Unmarshal(raw, &tpl)
	if r := k.call(t.Context(), "register_manual", map[string]any{"manual_call_template": tpl}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	r := k.chain(t.Context(), `await web.slow({ms: 50})`)
	if r.IsError || !strings.Contains(r.Text(), "slept 50ms") {
		t.Fatalf("slow over a cut stream: isError=%v %q", r.IsError, r.Text())
	}
	ev := events(dir)
	if !strings.Contains(ev, "cut stream of call slow") || !strings.Contains(ev, "resume last-event-id=") {
		t.Errorf("events.log shows no cut and resumption:\n%s", ev)
	}
	if n := strings.Count("\n"+ev, "\ncall slow id="); n != 1 {
		t.Errorf("the call reached the server %d times; resuming must not send it again:\n%s", n, ev)
	}
	// The session is intact: a later call on it works.
	if r := k.chain(t.Context(), `await web.echo({text: "after"})`); r.IsError || !strings.Contains(r.Text(), "after") {
		t.Errorf("echo after the resumed call: isError=%v %q", r.IsError, r.Text())
	}
}
