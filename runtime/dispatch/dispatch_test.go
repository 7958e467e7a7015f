package dispatch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

func newDispatcher(t *testing.T) *Dispatcher {
	t.Helper()
	reg := registry.New()
	for _, name := range []string{"starting", "off", "orphan"} {
		err := reg.Add(&manifest.Manifest{Version: 1, Backend: name, Tools: []manifest.Tool{{
			Name:        "sum",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`),
		}}}, true)
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{Path: "kiln.yaml", FromFile: true, Gateway: config.DefaultGateway(), Backends: []config.Backend{
		{Name: "off", Transport: config.TransportStdio, Command: "true", Enabled: false},
		{Name: "starting", Transport: config.TransportStdio, Command: "true", Enabled: true, Timeout: 50 * time.Millisecond},
	}}
	// Start is never called: "starting" stays in its initial state.
	d := New(reg, cfg, Options{})
	t.Cleanup(func() { d.Close() })
	return d
}

func TestCallToolStates(t *testing.T) {
	d := newDispatcher(t)
	tests := []struct {
		name, backend, args string
		code                Code
		mention             []string
	}{
		{"still starting: waits up to the call timeout", "starting", `{"a":1}`, CodeStarting, []string{`backend "starting" did not finish connecting within the call's timeout (50ms)`, "kiln://backend/starting"}},
		{"disabled", "off", `{"a":1}`, CodeUnavailable, []string{"disabled", "backends.off.enabled"}},
		{"compiled but not configured", "orphan", `{"a":1}`, CodeNotConfigured, []string{"not declared in its config", "add backends.orphan to kiln.yaml"}},
		{"invalid arguments before any dispatch", "starting", `{"a":"one"}`, CodeInvalidArgs, []string{"/a", "want number", "Expected arguments: {a: number}", "tool_info"}},
		{"unknown tool", "starting", `{}`, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := "sum"
			if tc.code == "" {
				tool, tc.code, tc.mention = "summ", CodeNotFound, []string{"did you mean starting.sum"}
			}
			_, err := d.CallTool(t.Context(), tc.backend, tool, json.RawMessage(tc.args))
			if got := CodeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestStatusListsEveryConfiguredBackend(t *testing.T) {
	d := newDispatcher(t)
	got := map[string]State{}
	for _, s := range d.Status() {
		got[s.Name] = s.State
	}
	if got["off"] != StateDisabled || got["starting"] != StateStarting || len(got) != 2 {
		t.Errorf("Status() = %v", got)
	}
}

func TestStartReportsFailedBackend(t *testing.T) {
	reg := registry.New()
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{
		{Name: "broken", Transport: config.TransportStdio, Command: "/nonexistent/kiln-test-binary", Enabled: true},
	}}
	cfg.Gateway.ConnectTimeout = 5 * time.Second
	d := New(reg, cfg, Options{})
	d.Start(t.Context())
	if err := d.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := d.Status()[0]
	if st.State != StateUnhealthy || !strings.Contains(st.Error, "kiln-test-binary") {
		t.Errorf("status = %+v", st)
	}
	_ = reg.Add(&manifest.Manifest{Version: 1, Backend: "broken", Tools: []manifest.Tool{{Name: "t", InputSchema: json.RawMessage(`{}`)}}}, true)
	_, err := d.CallTool(t.Context(), "broken", "t", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "kiln://backend/broken") {
		t.Errorf("call on failed backend: %v", err)
	}
	d.Close()
}

// TestTagLogger names the backend in a log message's logger, keeps the
// backend's own logger name after it, and passes params that are not an
// object (null among them, which used to reach a write into a nil map)
// unchanged.
func TestTagLogger(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"level":"info","data":"x"}`, `{"data":"x","level":"info","logger":"backend/b"}`},
		{`{"level":"info","logger":"db"}`, `{"level":"info","logger":"backend/b/db"}`},
		{`null`, `null`},
		{`[1]`, `[1]`},
		{`"s"`, `"s"`},
	} {
		if got := string(tagLogger("b", json.RawMessage(c.in))); got != c.want {
			t.Errorf("tagLogger(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
