package chain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// expectCall checks one ParseLiteralCall case; want nil means fall through.
func expectCall(t *testing.T, code string, want *LiteralCall) {
	t.Helper()
	got, ok := ParseLiteralCall(code)
	if want == nil {
		if ok {
			t.Fatalf("ParseLiteralCall(%q) = %+v (args %s), want fall-through", code, got, got.Args)
		}
		return
	}
	if !ok {
		t.Fatalf("ParseLiteralCall(%q) fell through, want %s.%s(%s)", code, want.Object, want.Tool, want.Args)
	}
	type flat struct{ Object, Tool, Args string }
	if d := cmp.Diff(flat{want.Object, want.Tool, string(want.Args)}, flat{got.Object, got.Tool, string(got.Args)}); d != "" {
		t.Fatalf("ParseLiteralCall(%q) (-want +got):\n%s", code, d)
	}
}

func call(obj, tool, args string) *LiteralCall {
	return &LiteralCall{Object: obj, Tool: tool, Args: json.RawMessage(args)}
}

func TestParseLiteralCallForms(t *testing.T) {
	tests := []struct {
		name, code string
		want       *LiteralCall
	}{
		{"const await return", `const r = await exa.web_search({query: "mcp"}); return r;`, call("exa", "web_search", `{"query":"mcp"}`)},
		{"let and newlines", "let result = await exa.web_search({query: 'mcp'})\nreturn result", call("exa", "web_search", `{"query":"mcp"}`)},
		{"var", `var x = await a.b({}); return x`, call("a", "b", `{}`)},
		{"const without await", `const r = a.b({n: 1}); return r;`, call("a", "b", `{"n":1}`)},
		{"return await", `return await exa.search({q: "x"})`, call("exa", "search", `{"q":"x"}`)},
		{"return without await", `return exa.search({q: "x"});`, call("exa", "search", `{"q":"x"}`)},
		{"bare call", `exa.search({q: "x"})`, call("exa", "search", `{"q":"x"}`)},
		{"bare await", `await exa.search({q: "x"});;`, call("exa", "search", `{"q":"x"}`)},
		{"no args", `return await a.list()`, call("a", "list", `{}`)},
		{"empty object", `a.list({})`, call("a", "list", `{}`)},
		{"trailing comma arg", `a.b({x: 1},)`, call("a", "b", `{"x":1}`)},
		{"globalThis dot", `return await globalThis.exa.search({q: 1})`, call("exa", "search", `{"q":1}`)},
		{"globalThis bracket single", `return await globalThis['my-backend'].get_data({})`, call("my-backend", "get_data", `{}`)},
		{"globalThis bracket double", `await globalThis["my-backend"]["get data"]()`, call("my-backend", "get data", `{}`)},
		{"tool bracket", `my_backend['get-data']({id: 7})`, call("my_backend", "get-data", `{"id":7}`)},
		{"reserved word tool", `return b.delete({id: 1})`, call("b", "delete", `{"id":1}`)},
		{"globalThis shadow ok", `const exa = await globalThis.exa.s({}); return exa`, call("exa", "s", `{}`)},
		{"other backend name as binding", `const tavily = await exa.s({}); return tavily`, call("exa", "s", `{}`)},
		{"strict JSON args", `return await a.b({"query": "x", "n": [1, 2.5, -3], "o": {"k": null, "t": true}})`,
			call("a", "b", `{"query":"x","n":[1,2.5,-3],"o":{"k":null,"t":true}}`)},
		{"comments", "// fetch it\nconst r = /* the call */ await a.b({x: 1 /* one */}); // done\nreturn r; // bye", call("a", "b", `{"x":1}`)},
		{"unicode string", `a.b({s: "héllo \u00e9 \u{1F600} \x41"})`, call("a", "b", `{"s":"héllo é 😀 A"}`)},
		{"escapes", `a.b({s: 'it\'s "q" \\ \n\t\0'})`, call("a", "b", `{"s":"it's \"q\" \\ \n\t\u0000"}`)},
		{"line continuation", "a.b({s: 'ab\\\ncd'})", call("a", "b", `{"s":"abcd"}`)},
		{"lone surrogate", `a.b({s: "\uD800"})`, call("a", "b", `{"s":"\ud800"}`)},
		{"surrogate pair escapes", `a.b({s: "\uD83D\uDE00"})`, call("a", "b", `{"s":"😀"}`)},
		{"identity escape", `a.b({s: "\q"})`, call("a", "b", `{"s":"q"}`)},
		{"numbers", `a.b({a: 1.0, b: 1e21, c: 1e-7, d: 0x1F, e: 0o17, f: 0b101, g: 1_000, h: .5, i: 5., j: -0, k: +2})`,
			call("a", "b", `{"a":1,"b":1e+21,"c":1e-7,"d":31,"e":15,"f":5,"g":1000,"h":0.5,"i":5,"j":0,"k":2}`)},
		{"big integer rounds like JS", `a.b({id: 12345678901234567890})`, call("a", "b", `{"id":12345678901234567000}`)},
		{"duplicate keys", `a.b({x: 1, y: 2, x: 3})`, call("a", "b", `{"x":3,"y":2}`)},
		{"integer keys first", `a.b({b: 1, 2: "two", "1": "one", 10: "ten", "01": "z"})`, call("a", "b", `{"1":"one","2":"two","10":"ten","b":1,"01":"z"}`)},
		{"reserved word keys", `a.b({default: 1, class: 2, new: 3})`, call("a", "b", `{"default":1,"class":2,"new":3}`)},
		{"nested trailing commas", `a.b({list: [1, 2,], o: {k: 'v',},},)`, call("a", "b", `{"list":[1,2],"o":{"k":"v"}}`)},
		{"dollar identifiers", `$x.$y({_a: 1})`, call("$x", "$y", `{"_a":1}`)},
		{"html chars stay raw", `a.b({s: "<b>&</b>"})`, call("a", "b", `{"s":"<b>&</b>"}`)},
		{"whitespace", "\ufeff\u00a0 return\tawait a.b( { x : 1 } ) ;\r\n", call("a", "b", `{"x":1}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectCall(t, tc.code, tc.want) })
	}
}

// TestParseLiteralCallFallsThrough lists near misses: each is valid or
// invalid JS whose meaning differs from one plain call, so tier 2 must hand
// it to the engine.
func TestParseLiteralCallFallsThrough(t *testing.T) {
	tests := []struct{ name, code string }{
		{"mismatched return", `const r = await a.b({}); return r2;`},
		{"return field", `const r = await a.b({}); return r.items;`},
		{"no return", `const r = await a.b({});`},
		{"shadowing receiver", `const a = await a.b({}); return a;`},
		{"return newline ASI", "return\nawait a.b({})"},
		{"return newline in comment", "return /*\n*/ a.b({})"},
		{"return name on next line", "const r = await a.b({})\nreturn\nr"},
		{"no separator", `const r = await a.b({}) return r`},
		{"two calls", `await a.b({}); return await a.c({});`},
		{"trailing statement", `const r = await a.b({}); console.log(r); return r;`},
		{"template literal", "a.b({q: `x`})"},
		{"template interpolation", "a.b({q: `${x}`})"},
		{"identifier value", `a.b({q: query})`},
		{"undefined value", `a.b({q: undefined})`},
		{"NaN", `a.b({q: NaN})`},
		{"Infinity literal", `a.b({q: 1e400})`},
		{"shorthand", `a.b({q})`},
		{"spread", `a.b({...opts})`},
		{"spread array", `a.b({l: [...xs]})`},
		{"computed key", `a.b({[k]: 1})`},
		{"method", `a.b({f() {}})`},
		{"getter", `a.b({get x() { return 1 }})`},
		{"function call value", `a.b({q: String(1)})`},
		{"arrow value", `a.b({f: () => 1})`},
		{"proto key", `a.b({__proto__: {x: 1}})`},
		{"quoted proto key", `a.b({"__proto__": {x: 1}})`},
		{"holes", `a.b({l: [1,,2]})`},
		{"string argument", `a.b("x")`},
		{"array argument", `a.b([1])`},
		{"two arguments", `a.b({}, {})`},
		{"undefined argument", `a.b(undefined)`},
		{"optional chaining", `a?.b({})`},
		{"optional call", `a.b?.({})`},
		{"deep member", `a.b.c({})`},
		{"globalThis only", `globalThis.b({})`},
		{"computed member", `a[name]({})`},
		{"this receiver", `this.b({})`},
		{"new", `new a.b({})`},
		{"bigint", `a.b({n: 1n})`},
		{"legacy octal", `a.b({n: 017})`},
		{"octal escape", `a.b({s: "\101"})`},
		{"bad separator", `a.b({n: 1__0})`},
		{"regex", `a.b({r: /x/})`},
		{"concatenation", `a.b({s: "a" + "b"})`},
		{"negative negative", `a.b({n: - -1})`},
		{"unterminated string", `a.b({s: "abc})`},
		{"newline in string", "a.b({s: \"a\nb\"})"},
		{"unterminated comment", `a.b({}) /*`},
		{"type annotation", `const r: any = await a.b({}); return r;`},
		{"as cast", `return (await a.b({})) as any`},
		{"parenthesized", `return (await a.b({}))`},
		{"then", `return a.b({}).then(r => r)`},
		{"non-ASCII identifier", `café.b({})`},
		{"unicode escape identifier", `\u0061.b({})`},
		{"invalid UTF-8", "a.b({s: \"\xff\"})"},
		{"export main", `export default async function main() { return await a.b({}) }`},
		{"empty", ``},
		{"only comment", `// nothing`},
		{"assignment", `r = await a.b({}); return r;`},
		{"comparison op", `const r = await a.b({}); return r == 1`},
		{"reserved binding", `const let = await a.b({}); return let`},
		{"json only", `{"tool": "a.b"}`},
		{"too deep", "a.b({x: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "})"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectCall(t, tc.code, nil) })
	}
}

func TestParseIntrospection(t *testing.T) {
	tests := []struct {
		name, code string
		want       *Introspection
	}{
		{"all", `return __interfaces`, &Introspection{}},
		{"bare", `__interfaces;`, &Introspection{}},
		{"path", `return __interfaces.exa["web-search"].input_schema;`, &Introspection{Path: []string{"exa", "web-search", "input_schema"}}},
		{"const form", "const i = __interfaces.exa\nreturn i", &Introspection{Path: []string{"exa"}}},
		{"keys", `return Object.keys(__interfaces)`, &Introspection{Keys: true}},
		{"keys of backend", `return Object.keys(__interfaces['exa'])`, &Introspection{Keys: true, Path: []string{"exa"}}},
		{"get tool interface", `return __getToolInterface("exa.search")`, &Introspection{Func: true, Name: "exa.search"}},
		{"get tool interface await", `const t = await __getToolInterface('search'); return t;`, &Introspection{Func: true, Name: "search"}},
		{"shadowing", `const __interfaces = __interfaces; return __interfaces`, nil},
		{"computed", `return __interfaces[name]`, nil},
		{"call on it", `return __interfaces.exa.search.name.toUpperCase()`, nil},
		{"identifier arg", `return __getToolInterface(name)`, nil},
		{"two args", `return __getToolInterface("a", "b")`, nil},
		{"keys of call", `return Object.keys(__getToolInterface("a"))`, nil},
		{"other global", `return console.log`, nil},
		{"a call", `return a.b({})`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseIntrospection(tc.code)
			if tc.want == nil {
				if ok {
					t.Fatalf("ParseIntrospection(%q) = %+v, want fall-through", tc.code, got)
				}
				return
			}
			if !ok {
				t.Fatalf("ParseIntrospection(%q) fell through, want %+v", tc.code, *tc.want)
			}
			if d := cmp.Diff(*tc.want, got); d != "" {
				t.Fatalf("ParseIntrospection(%q) (-want +got):\n%s", tc.code, d)
			}
		})
	}
}

func TestIntrospectionAnswer(t *testing.T) {
	backends := []bridge.Backend{
		{Name: "exa", Tools: []manifest.Tool{
			{Name: "search", Description: "Search the web.", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"maximum":1.0}},"required":["q"]}`)},
			{Name: "get-page", Description: "Fetch a page.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}},
		{Name: "my-backend", Tools: []manifest.Tool{
			{Name: "search", Description: "Other search.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "2fa", Description: "Code.", InputSchema: json.RawMessage(`not json`)},
		}},
	}
	exaSearch := `{"name":"search","description":"Search the web.","input_schema":{"type":"object","properties":{"q":{"type":"string"},"n":{"maximum":1}},"required":["q"]}}`
	tests := []struct {
		name string
		in   Introspection
		want string // "" means fall through
	}{
		{"backend keys", Introspection{Keys: true}, `["exa","my-backend"]`},
		{"tool keys", Introspection{Keys: true, Path: []string{"exa"}}, `["get-page","search"]`},
		{"integer-like tool keys first", Introspection{Keys: true, Path: []string{"my-backend"}}, `["2fa","search"]`},
		{"one tool", Introspection{Path: []string{"exa", "search"}}, exaSearch},
		{"schema field", Introspection{Path: []string{"exa", "search", "input_schema", "required", "0"}}, `"q"`},
		{"array length", Introspection{Path: []string{"exa", "search", "input_schema", "required", "length"}}, `1`},
		{"invalid schema is null", Introspection{Path: []string{"my-backend", "2fa", "input_schema"}}, `null`},
		{"missing last key", Introspection{Path: []string{"exa", "nope"}}, `null`},
		{"missing inner key throws", Introspection{Path: []string{"nope", "x"}}, ""},
		{"identifier is not a key", Introspection{Path: []string{"my_backend", "search"}}, ""},
		{"string property", Introspection{Path: []string{"exa", "search", "name", "length"}}, ""},
		{"proto", Introspection{Path: []string{"exa", "__proto__"}}, ""},
		{"dotted", Introspection{Func: true, Name: "exa.search"}, exaSearch},
		{"dotted identifier", Introspection{Func: true, Name: "my_backend.search"}, `{"name":"search","description":"Other search.","input_schema":{"type":"object"}}`},
		{"dotted tool identifier", Introspection{Func: true, Name: "exa.get_page"}, `{"name":"get-page","description":"Fetch a page.","input_schema":{"type":"object"}}`},
		{"bare name first backend", Introspection{Func: true, Name: "search"}, exaSearch},
		{"bare identifier", Introspection{Func: true, Name: "_2fa"}, `{"name":"2fa","description":"Code.","input_schema":null}`},
		{"unknown", Introspection{Func: true, Name: "exa.nope"}, `null`},
		{"leading dot", Introspection{Func: true, Name: ".search"}, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.in.Answer(backends)
			if tc.want == "" {
				if ok {
					t.Fatalf("Answer(%+v) = %s, want fall-through", tc.in, got)
				}
				return
			}
			if !ok {
				t.Fatalf("Answer(%+v) fell through, want %s", tc.in, tc.want)
			}
			if d := cmp.Diff(tc.want, string(got)); d != "" {
				t.Fatalf("Answer(%+v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func FuzzParseLiteralCall(f *testing.F) {
	for _, s := range []string{
		`const r = await exa.search({query: "mcp"}); return r;`,
		`return await globalThis['my-b']["t"]({a: [1, 2.5e3, -0x1f], 'b': {c: null,},})`,
		`b.t({s: "\u{1F600}\uD800\x41\n", 1: true, __proto__: 1})`,
		"const r = a.b({})\nreturn r",
		`return __interfaces.exa["x"]`,
		`__getToolInterface("a.b")`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		c, ok := ParseLiteralCall(code)
		if ok {
			if !json.Valid(c.Args) {
				t.Fatalf("ParseLiteralCall(%q) returned invalid JSON args %q", code, c.Args)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(c.Args, &obj); err != nil {
				t.Fatalf("ParseLiteralCall(%q) args %s are not an object: %v", code, c.Args, err)
			}
		}
		ParseIntrospection(code)
	})
}
