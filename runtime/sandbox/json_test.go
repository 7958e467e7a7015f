package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/dop251/goja"
	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/chain/jslit"
)

// jsonCases are values whose JSON.stringify output the sandbox's capped
// encoder must reproduce byte for byte.
var jsonCases = []string{
	`1`, `-0`, `1e21`, `0.1 + 0.2`, `NaN`, `-Infinity`, `"a\"b\\c\n\u0001\u2028<>&é😀"`, `true`, `null`,
	`undefined`, `() => 1`, `Symbol("s")`,
	`[1, undefined, () => 1, Symbol("x"), null, [], {}]`,
	`{b: 1, a: 2, 10: "x", 2: "y", "-1": "z", u: undefined, f() {}, [Symbol("k")]: 1}`,
	`{d: new Date(0), n: new Number(3), s: new String("s"), t: new Boolean(false)}`,
	`{toJSON(k) { return "k=" + k }}`,
	`{nested: {toJSON(k) { return [k, 1] }}}`,
	`Object.create({inherited: 1}, {own: {value: 2, enumerable: true}, hidden: {value: 3}})`,
	`(() => { const a = [1, 2]; a.extra = 3; return a })()`,
	`(() => { const a = []; a.length = 3; a[1] = "x"; return a })()`,
	`{get g() { return {deep: [1, {x: null}]} }}`,
	`new Map([[1, 2]])`, `"lone \uD800 surrogate \uDC00\uD83D\uDE00"`,
	`[new Error("e")]`,
}

func TestStringifyMatchesNative(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	plain := goja.New()
	for _, expr := range jsonCases {
		for _, space := range []string{"undefined", "2", `"--"`, "20", "new Number(1)"} {
			code := "return [JSON.stringify(" + expr + ", null, " + space + ")]"
			want, err := plain.RunString("JSON.stringify([JSON.stringify(" + expr + ", null, " + space + ")])")
			if err != nil {
				t.Fatalf("plain goja %s: %v", expr, err)
			}
			out := expectValue(t, sb, code, want.String())
			_ = out
		}
	}
}

// TestReturnValueMatchesNative: the value Run returns is what
// JSON.stringify gives.
func TestReturnValueMatchesNative(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	plain := goja.New()
	for _, expr := range jsonCases {
		want, err := plain.RunString("JSON.stringify(" + expr + ")")
		if err != nil {
			t.Fatal(err)
		}
		out := runCode(t, sb, "return "+expr)
		w := want.String()
		if goja.IsUndefined(want) {
			w = "null"
		}
		if d := cmp.Diff(w, string(out.Value)); d != "" {
			t.Errorf("return %s (-want +got):\n%s", expr, d)
		}
	}
}

// TestLiteralMatchesEngine checks tier 2's literal reader against goja:
// for each literal, jslit must produce what JSON.stringify produces.
func TestLiteralMatchesEngine(t *testing.T) {
	rt := goja.New()
	for _, lit := range []string{
		`{a: 1, 'b': "two", "c": [true, false, null], d: {e: -1.5e-7}}`,
		`{b: 1, 2: "two", "1": "one", 10: "ten", "01": "z", 1.5: "f", 0x10: "h"}`,
		`{x: 1, y: 2, x: 3,}`,
		`{s: "\u{1F600}\uD800\x41\0\v\'\"\\\n", t: 'it\'s'}`,
		`{n: [0, -0, 1e21, 1e-7, 123456789012345680000, 0.1, 1_000_000, 0b1010, 0o17, .5, 5., 9007199254740993, 12345678901234567890]}`,
		`{"default": 1, class: 2, new: 3, $: 4, _: 5}`,
		`{nested: [[[]], {}, [{}]]}`,
		`{e: 1e308, f: 2.2250738585072014e-308, g: 5e-324}`,
	} {
		want, err := rt.RunString("JSON.stringify(" + lit + ")")
		if err != nil {
			t.Fatalf("goja %s: %v", lit, err)
		}
		toks, ok := jslit.Tokenize(lit)
		if !ok {
			t.Fatalf("Tokenize(%s) failed", lit)
		}
		got, next, ok := jslit.Literal(toks, 0)
		if !ok || toks[next].Kind != jslit.EOF {
			t.Fatalf("Literal(%s) failed", lit)
		}
		if d := cmp.Diff(want.String(), string(got)); d != "" {
			t.Errorf("Literal(%s) (-engine +jslit):\n%s", lit, d)
		}
		// Reencode is JSON.stringify(JSON.parse(x)).
		again, ok := jslit.Reencode(got)
		if !ok || string(again) != want.String() {
			t.Errorf("Reencode(%s) = %s, %v", got, again, ok)
		}
		if !json.Valid(got) {
			t.Errorf("Literal(%s) is not valid JSON: %s", lit, got)
		}
	}
}

// TestStringifyReplacerMatchesNative covers the JS path taken with a
// replacer.
func TestStringifyReplacerMatchesNative(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	plain := goja.New()
	for _, call := range []string{
		`JSON.stringify({a: 1, b: [1, {a: 2, z: 3}], c: {a: 3, d: 4}}, ["a", "c", "b"])`,
		`JSON.stringify({1: "x", a: 1, b: 2}, [new String("a"), 1, 1, {}], 2)`,
		`JSON.stringify({a: 1, b: "x", c: [1, 2]}, (k, v) => typeof v === "number" ? v * 2 : v, "\t")`,
		`JSON.stringify({a: {toJSON() { return {b: 1} }}}, (k, v) => k === "b" ? undefined : v)`,
		`JSON.stringify([new Number(1), new String("s")], (k, v) => v)`,
	} {
		want, err := plain.RunString("JSON.stringify([" + call + "])")
		if err != nil {
			t.Fatal(err)
		}
		expectValue(t, sb, "return ["+call+"]", want.String())
	}
}
