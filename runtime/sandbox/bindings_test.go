package sandbox

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dop251/goja"
	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// boundJS (the hardened runtime's JSON.stringify needs a run) lists, for each backend object the preamble put on globalThis
// since before, the globals holding it and its own properties, in the
// order the globals were bound.
const boundJS = `(function (before) {
  const seen = new Set(before);
  const out = [];
  const objs = new Map();
  for (const g of Object.getOwnPropertyNames(globalThis)) {
    if (seen.has(g) || g === "__interfaces" || g === "__getToolInterface") continue;
    const o = globalThis[g];
    if (o === null || typeof o !== "object") continue;
    let e = objs.get(o);
    if (!e) { e = {Bindings: [], Tools: Object.getOwnPropertyNames(o)}; objs.set(o, e); out.push(e); }
    e.Bindings.push(g);
  }
  return out;
})`

// TestBindingsMatchPreamble: what error hints take from the bridge table
// is what the preamble really binds in a hardened runtime, names that
// collide with host globals, keywords and each other included.
func TestBindingsMatchPreamble(t *testing.T) {
	tool := func(names ...string) []manifest.Tool {
		var out []manifest.Tool
		for _, n := range names {
			out = append(out, manifest.Tool{Name: n, InputSchema: json.RawMessage(`{}`)})
		}
		return out
	}
	backends := append(slices.Clone(testBackends),
		bridge.Backend{Name: "console", Tools: tool("log", "new", "__proto__")},
		bridge.Backend{Name: "fetch", Tools: tool("get")},
		bridge.Backend{Name: "my_backend", Tools: tool("a-b", "a_b", "1st")},
		bridge.Backend{Name: "9lives", Tools: tool("x.y")},
	)
	sb, err := New(Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: &fakeCaller{fn: echo}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.harden()
	if err != nil {
		t.Fatal(err)
	}
	before, err := p.rt.RunString("Object.getOwnPropertyNames(globalThis)")
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.loadPreamble(p); err != nil {
		t.Fatal(err)
	}
	fv, err := p.rt.RunString(boundJS)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := goja.AssertFunction(fv)
	res, err := fn(goja.Undefined(), before)
	if err != nil {
		t.Fatal(err)
	}
	var got []bridgeBackend
	if err := p.rt.ExportTo(res, &got); err != nil {
		t.Fatal(err)
	}
	// Property order differs for integer-like keys; hints do not rely on
	// it. The script cannot tell original names (a host global may hold
	// one), so they are compared through the bindings only.
	norm := func(bs []bridgeBackend) []bridgeBackend {
		out := slices.Clone(bs)
		for i := range out {
			out[i].Name = ""
			out[i].Tools = slices.Sorted(slices.Values(out[i].Tools))
		}
		return out
	}
	want := sb.bound(sb.preamble.bindings)
	if diff := cmp.Diff(norm(got), norm(want)); diff != "" {
		t.Errorf("bindings (-preamble +table):\n%s", diff)
	}
	if len(want) != len(backends) {
		t.Errorf("%d backends in the table, want %d", len(want), len(backends))
	}
}
