package bridge

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

func TestIdent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"exa", "exa"},
		{"my-search-backend", "my_search_backend"},
		{"123start", "_123start"},
		{"has.dots", "has_dots"},
		{"delete", "delete_"},
		{"new", "new_"},
		{"class", "class_"},
		{"default", "default_"},
		{"import", "import_"},
		{"console", "console_"},
		{"JSON", "JSON_"},
		{"globalThis", "globalThis_"},
		{"__proto__", "__proto___"},
		{"", "_"},
		{"a b", "a_b"},
		{"é", "_"},
		{"🚀go", "_go"},
		{"9", "_9"},
		{"get", "get"},
		{"$x", "_x"},
	}
	for _, tt := range tests {
		if got := Ident(tt.in); got != tt.want {
			t.Errorf("Ident(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAssignCollisions(t *testing.T) {
	names := []string{"a-b", "a_b", "a.b", "a_b_2", "delete", "delete_"}
	want := map[string]string{
		"a_b":     "a_b",
		"a_b_2":   "a_b_2",
		"delete_": "delete_",
		"a-b":     "a_b_3",
		"a.b":     "a_b_4",
		"delete":  "delete__2",
	}
	for range 5 {
		shuffled := slices.Clone(names)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if diff := cmp.Diff(want, assign(shuffled)); diff != "" {
			t.Fatalf("assign(%q) (-want +got):\n%s", shuffled, diff)
		}
	}
}

var hostileBackends = []string{
	"delete", "my-backend", "my_backend", "has.dots", "123start", "console",
	`a"b\c`, "</script>", "x\u2028y", "🚀rocket", "__proto__", "constructor",
}

var hostileTools = []string{
	"delete", "get-data", "get_data", "has.dots", "123start", `quote"s`, `back\slash`,
	"</script><script>alert(1)</script>", "line\u2028sep", "para\u2029", "emoji😀",
	"__proto__", "constructor", "toString", "with space", "new\nline", "tab\t", "'single'",
}

func hostile() []Backend {
	var bs []Backend
	for i, b := range hostileBackends {
		var tools []manifest.Tool
		for j, tn := range hostileTools {
			tools = append(tools, manifest.Tool{
				Name:        tn,
				Description: "tool " + tn + " of " + b,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","description":"</script>\u2028"}},"x-id":` + jsonInt(i*100+j) + `}`),
			})
		}
		bs = append(bs, Backend{Name: b, Tools: tools})
	}
	return bs
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// runtimeWith runs the preamble in a fresh goja runtime whose __kiln_call
// records every call as [backend, tool, args] and answers "ok:<tool>".
func runtimeWith(t *testing.T, backends []Backend) (*goja.Runtime, *[][3]string) {
	t.Helper()
	rt := goja.New()
	var calls [][3]string
	err := rt.Set("__kiln_call", func(c goja.FunctionCall) goja.Value {
		args, _ := json.Marshal(c.Argument(2).Export())
		calls = append(calls, [3]string{c.Argument(0).String(), c.Argument(1).String(), string(args)})
		p, resolve, _ := rt.NewPromise()
		_ = resolve(rt.ToValue("ok:" + c.Argument(1).String()))
		return rt.ToValue(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunString(`globalThis.console = {log: function () {}, marker: 42};`); err != nil {
		t.Fatal(err)
	}
	src := Preamble(backends)
	prog, err := goja.Compile("preamble.js", string(src), false)
	if err != nil {
		t.Fatalf("preamble does not compile: %v\n%s", err, src)
	}
	if _, err := rt.RunProgram(prog); err != nil {
		t.Fatalf("preamble fails: %v", err)
	}
	return rt, &calls
}

func run(t *testing.T, rt *goja.Runtime, src string) goja.Value {
	t.Helper()
	v, err := rt.RunString(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

func TestPreambleCallsWithOriginalNames(t *testing.T) {
	backends := hostile()
	rt, calls := runtimeWith(t, backends)
	table := Lookup(backends)

	var want [][3]string
	var script strings.Builder
	script.WriteString("const results = []; (async () => {\n")
	n := 0
	for _, b := range backends {
		obj, _ := table.BackendIdent(b.Name)
		for _, tl := range b.Tools {
			tool, _ := table.ToolIdent(b.Name, tl.Name)
			// Identifier syntax, exactly what a model writes.
			script.WriteString("results.push(await " + obj + "." + tool + "({n: " + jsonInt(n) + "}));\n")
			want = append(want, [3]string{b.Name, tl.Name, `{"n":` + jsonInt(n) + `}`})
			n++
			// Original names through globalThis, where the host allows the alias.
			if b.Name != "console" && b.Name != "__proto__" && b.Name != "constructor" {
				script.WriteString("results.push(await globalThis[" + jsString(b.Name) + "][" + jsString(tl.Name) + "]({n: " + jsonInt(n) + "}));\n")
				want = append(want, [3]string{b.Name, tl.Name, `{"n":` + jsonInt(n) + `}`})
				n++
			}
		}
	}
	script.WriteString("})();")
	run(t, rt, script.String())
	if diff := cmp.Diff(want, *calls); diff != "" {
		t.Fatalf("__kiln_call arguments (-want +got):\n%s", diff)
	}
	if got := run(t, rt, "results.length").ToInteger(); got != int64(n) {
		t.Fatalf("resolved %d results, want %d", got, n)
	}
	if got := run(t, rt, "results[0]").String(); got != "ok:"+backends[0].Tools[0].Name {
		t.Fatalf("first result = %q", got)
	}
}

func TestPreambleGlobals(t *testing.T) {
	rt, calls := runtimeWith(t, hostile())
	checks := []string{
		`globalThis["my-backend"] === globalThis.my_backend_2`,
		`my_backend !== my_backend_2`,
		`globalThis["has.dots"] === has_dots`,
		`globalThis["123start"] === _123start`,
		`globalThis["delete"] === delete_`,
		`console.marker === 42`,
		`typeof console_.delete_ === "function"`,
		`Object.isFrozen(my_backend)`,
		`Object.keys(my_backend).indexOf("get-data") === -1`,
		`my_backend["get-data"] === my_backend.get_data_2`,
		`my_backend.delete === my_backend.delete_`,
		`(() => { "use strict"; try { my_backend.x = 1; return false } catch (e) { return e instanceof TypeError } })()`,
		`(() => { "use strict"; try { my_backend = 1; return false } catch (e) { return true } })()`,
		`__interfaces["my-backend"]["get-data"].name === "get-data"`,
		`__interfaces["my-backend"]["get-data"].description === "tool get-data of my-backend"`,
		`__interfaces["my-backend"]["__proto__"].name === "__proto__"`,
		`__interfaces["</script>"]["line\u2028sep"].input_schema.properties.n.description === "</script>\u2028"`,
		`Object.isFrozen(__interfaces["my-backend"]["get-data"].input_schema)`,
		`__getToolInterface("my-backend.get-data").name === "get-data"`,
		`__getToolInterface("my_backend_2.get_data_2").name === "get-data"`,
		`__getToolInterface("my-backend.get-data").input_schema["x-id"] === 101`,
		`__getToolInterface("has.dots.has.dots").input_schema["x-id"] === 303`,
		`__getToolInterface("emoji😀").name === "emoji😀"`,
		`__getToolInterface("tab_").name === "tab\t"`,
		`__getToolInterface("nope") === null`,
		`__getToolInterface("my-backend.nope") === null`,
		`__getToolInterface("hasOwnProperty") === null`,
		`__getToolInterface("my-backend.hasOwnProperty") === null`,
	}
	for _, c := range checks {
		if !run(t, rt, c).ToBoolean() {
			t.Errorf("false: %s", c)
		}
	}
	if len(*calls) != 0 {
		t.Errorf("globals checks made calls: %v", *calls)
	}
}

func TestPreambleUndefinedArgs(t *testing.T) {
	rt, calls := runtimeWith(t, []Backend{{Name: "b", Tools: []manifest.Tool{{Name: "t", InputSchema: json.RawMessage(`{}`)}}}})
	run(t, rt, `b.t()`)
	if diff := cmp.Diff([][3]string{{"b", "t", "null"}}, *calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
}

func TestPreambleEmptyAndInvalidSchema(t *testing.T) {
	rt, _ := runtimeWith(t, []Backend{
		{Name: "b", Tools: []manifest.Tool{{Name: "t", InputSchema: json.RawMessage(`{not json`)}}},
		{Name: "empty"},
	})
	for _, c := range []string{
		`__interfaces.b.t.input_schema === null`,
		`Object.keys(empty).length === 0`,
		`Object.keys(__interfaces).join() === "b,empty"`,
	} {
		if !run(t, rt, c).ToBoolean() {
			t.Errorf("false: %s", c)
		}
	}
}

func TestPreambleDeterministic(t *testing.T) {
	backends := hostile()
	want := Preamble(backends)
	for range 5 {
		shuffled := slices.Clone(backends)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i := range shuffled {
			tools := slices.Clone(shuffled[i].Tools)
			rand.Shuffle(len(tools), func(a, b int) { tools[a], tools[b] = tools[b], tools[a] })
			shuffled[i].Tools = tools
		}
		if got := Preamble(shuffled); string(got) != string(want) {
			t.Fatal("Preamble depends on input order")
		}
	}
}

func TestLookupResolve(t *testing.T) {
	table := Lookup(hostile())
	tests := []struct {
		obj, tool         string
		backend, wantTool string
		ok                bool
	}{
		{"my_backend_2", "get_data_2", "my-backend", "get-data", true},
		{"my-backend", "get-data", "my-backend", "get-data", true},
		{"my_backend", "get_data", "my_backend", "get_data", true},
		{"delete_", "delete_", "delete", "delete", true},
		{"delete", "delete", "delete", "delete", true},
		{"_123start", "_123start", "123start", "123start", true},
		{"console_", "toString", "console", "toString", true},
		{"my_backend", "nope", "", "", false},
		{"nope", "get_data", "", "", false},
	}
	for _, tt := range tests {
		b, tool, ok := table.Resolve(tt.obj, tt.tool)
		if b != tt.backend || tool != tt.wantTool || ok != tt.ok {
			t.Errorf("Resolve(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.obj, tt.tool, b, tool, ok, tt.backend, tt.wantTool, tt.ok)
		}
	}
}

func BenchmarkPreambleRun(b *testing.B) {
	prog, err := goja.Compile("preamble.js", string(Preamble(hostile())), false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rt := goja.New()
		_ = rt.Set("__kiln_call", func(goja.FunctionCall) goja.Value { return goja.Undefined() })
		if _, err := rt.RunProgram(prog); err != nil {
			b.Fatal(err)
		}
	}
}

// Ref must name what the preamble binds, collisions included, so call
// examples shown to a model run as written.
func TestRefCallsTheRightTool(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	backends := []Backend{
		{Name: "my-backend", Tools: []manifest.Tool{{Name: "get-data", InputSchema: schema}, {Name: "get_data", InputSchema: schema}}},
		{Name: "my_backend", Tools: []manifest.Tool{{Name: "delete", InputSchema: schema}}},
	}
	table := Lookup(backends)
	for _, b := range backends {
		for _, tool := range b.Tools {
			rt, calls := runtimeWith(t, backends)
			ref := table.Ref(b.Name, tool.Name)
			run(t, rt, ref+"({})")
			if len(*calls) != 1 || (*calls)[0][0] != b.Name || (*calls)[0][1] != tool.Name {
				t.Errorf("%s (from Ref(%q, %q)) called %v", ref, b.Name, tool.Name, *calls)
			}
		}
	}
	if got := table.Ref("unknown-backend", "a.b"); got != "unknown_backend.a_b" {
		t.Errorf("Ref for names outside the table = %q", got)
	}
}

func TestUnbindRemovesOnlyTheNamedBackends(t *testing.T) {
	backends := []Backend{
		{Name: "kept", Tools: []manifest.Tool{{Name: "echo"}}},
		{Name: "my-secret", Tools: []manifest.Tool{{Name: "read"}}},
		{Name: "console", Tools: []manifest.Tool{{Name: "log"}}}, // a host-owned name
	}
	rt, _ := runtimeWith(t, backends)
	if got := run(t, rt, `typeof my_secret + typeof globalThis["my-secret"]`).String(); got != "objectobject" {
		t.Fatalf("before Unbind: %s", got)
	}
	run(t, rt, Unbind([]Backend{backends[1], backends[2]}))
	checks := map[string]string{
		`typeof my_secret`:                  "undefined",
		`typeof globalThis["my-secret"]`:    "undefined",
		`typeof kept.echo`:                  "function",
		`String(globalThis.console.marker)`: "42", // the host's console stays
	}
	for src, want := range checks {
		if got := run(t, rt, src).String(); got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
	if Unbind(nil) != "" {
		t.Error("Unbind(nil) should be empty")
	}
}

// TestBindings: the table lists each backend's bound identifier and its
// tool properties, identifiers first, then the original names that differ.
func TestBindings(t *testing.T) {
	got := Lookup([]Backend{
		{Name: "my-backend", Tools: []manifest.Tool{{Name: "get-data"}, {Name: "delete"}, {Name: "ok"}}},
		{Name: "console", Tools: []manifest.Tool{{Name: "log"}}},
	}).Bindings()
	want := []Binding{
		{Name: "console", Ident: "console_", Tools: []string{"log"}},
		{Name: "my-backend", Ident: "my_backend", Tools: []string{"delete_", "get_data", "ok", "delete", "get-data"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Bindings (-want +got):\n%s", diff)
	}
}
