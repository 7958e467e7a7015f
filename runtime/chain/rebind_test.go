package chain

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/search"
)

// liveTools stands in for the dispatcher behind the catalog: it lists the
// tools a backend publishes now.
type liveTools map[string][]manifest.Tool

func (l liveTools) Tools(_ context.Context, name string) ([]manifest.Tool, error) {
	return l[name], nil
}
func (liveTools) Snapshot(context.Context, string) (*manifest.Manifest, error) {
	return nil, errors.New("not used")
}
func (liveTools) AddBackend(config.Backend) error { return nil }
func (liveTools) RemoveBackend(string) bool       { return true }
func (liveTools) Ready(string) <-chan struct{}    { return nil }
func (liveTools) Status() []dispatch.Status       { return nil }

// A compiled backend whose name is not an identifier is bound twice by
// the compiled preamble: as my_backend and as globalThis["my-backend"].
// When its live tools drift (under drift: warn), the catalog's extra preamble rebinds it, and
// a program sees the live tools under both names, not the compiled object
// under the original one. A compiled backend the config leaves out
// (old-vault, bound as old_vault_2 because old_vault is another backend's)
// is unbound under both of its names, and old_vault stays bound.
func TestExtraPreambleRebindsOriginalNames(t *testing.T) {
	compiled := []manifest.Tool{{Name: "get-data", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	reg := registry.New()
	for _, b := range []string{"my-backend", "old-vault", "old_vault"} {
		if err := reg.Add(&manifest.Manifest{Version: 1, Backend: b, Tools: compiled}, true); err != nil {
			t.Fatal(err)
		}
	}
	backends := []bridge.Backend{{Name: "my-backend", Tools: compiled}, {Name: "old-vault", Tools: compiled}, {Name: "old_vault", Tools: compiled}}
	rec := &recorder{}
	sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: rec})
	if err != nil {
		t.Fatal(err)
	}
	live := liveTools{"my-backend": append(compiled, manifest.Tool{Name: "fresh-tool", InputSchema: json.RawMessage(`{"type":"object"}`)})}
	// drift: warn serves the live tools (pin would hold fresh-tool back).
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{Name: "my-backend", Enabled: true, Drift: config.DriftWarn}, {Name: "old_vault", Enabled: true}}}
	cat := catalog.New(catalog.Options{Registry: reg, Backends: live, Config: cfg, Search: catalog.Lexical(search.Build(nil))})
	if err := cat.Refresh(t.Context(), "my-backend"); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Caller: rec, Registry: reg, Catalog: cat, Sandbox: sb})
	for _, tc := range []struct{ code, want string }{
		{`const b = globalThis["my-backend"]; return await b["fresh-tool"]({n: 1});`, `my-backend.fresh-tool {"n":1}`},
		{`const b = my_backend; return await b.fresh_tool({n: 2});`, `my-backend.fresh-tool {"n":2}`},
		{`const b = globalThis["my-backend"]; return b === my_backend;`, ""},
		{`return [typeof globalThis["old-vault"], typeof globalThis.old_vault_2, typeof old_vault.get_data].join();`, ""},
	} {
		rec.calls = nil
		r := e.Run(t.Context(), Request{Code: tc.code})
		switch {
		case tc.want != "" && (r.IsError || strings.Join(rec.calls, "|") != tc.want):
			t.Errorf("%s\n  calls %q, result %s; want the call %s", tc.code, rec.calls, r.TextContent(), tc.want)
		case strings.Contains(tc.code, "===") && !strings.Contains(r.TextContent(), "true"):
			t.Errorf("%s\n  = %s; want true: both names hold the live object", tc.code, r.TextContent())
		case strings.Contains(tc.code, "old-vault") && !strings.Contains(r.TextContent(), "undefined,undefined,function"):
			t.Errorf("%s\n  = %s; want the hidden backend unbound under both names and old_vault bound", tc.code, r.TextContent())
		}
	}
}
