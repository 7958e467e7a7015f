package chain

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/sandbox"
)

// TestLiteralMatchesSandbox: for every call tier 2 recognizes, the sandbox
// running the same code makes exactly the call tier 2 would make, byte
// for byte.
func TestLiteralMatchesSandbox(t *testing.T) {
	backends := []bridge.Backend{
		{Name: "exa", Tools: []manifest.Tool{{Name: "search", InputSchema: json.RawMessage(`{}`)}, {Name: "get-page", InputSchema: json.RawMessage(`{}`)}}},
		{Name: "my-backend", Tools: []manifest.Tool{{Name: "get data", InputSchema: json.RawMessage(`{}`)}, {Name: "delete", InputSchema: json.RawMessage(`{}`)}}},
	}
	table := bridge.Lookup(backends)
	rec := &recorder{}
	sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: rec})
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{
		`const r = await exa.search({query: "mcp", n: 5}); return r;`,
		"let x = await exa.search({q: 'a'})\nreturn x",
		`return await exa.get_page({url: "https://example.com/?a=1&b=<2>"})`,
		`exa.search()`,
		`await globalThis.exa.search({})`,
		`return await globalThis['my-backend']['get data']({id: 0x1F, list: [1, 2.50, -3e-7, 1e21,], nested: {'k': null, t: true,},})`,
		`return my_backend.delete_({id: 12345678901234567890})`,
		`return my_backend["delete"]({})`,
		`exa.search({b: 1, 2: "two", "1": "one", 10: "ten", "01": "z", x: 1, x: 2})`,
		`exa.search({s: "\u00e9\u{1F600}\x41\0\v\b\f\t\n\r\\\"'", u: '\uD800', w: "\u2028"})`,
		`exa.search({default: 1, class: 2, "": 3, 1.5: 4, 1e3: 5, .5: 6})`,
		"// comment\nreturn /* c */ await exa.search({q: 1 /* one */}) // end",
	} {
		sc, ok := ParseLiteralCall(code)
		if !ok {
			t.Fatalf("tier 2 does not recognize %q", code)
		}
		backend, tool, ok := table.Resolve(sc.Object, sc.Tool)
		if !ok {
			t.Fatalf("%q: %s.%s does not resolve", code, sc.Object, sc.Tool)
		}
		rec.calls = nil
		out, err := sb.Run(t.Context(), code, sandbox.RunOptions{})
		if err != nil || out.IsError {
			t.Fatalf("%q: sandbox: %v %+v", code, err, out)
		}
		want := backend + "." + tool + " " + string(sc.Args)
		if len(rec.calls) != 1 || rec.calls[0] != want {
			t.Errorf("%q:\ntier 2:  %q\nsandbox: %q", code, want, rec.calls)
		}
	}
}

// TestIntrospectionMatchesSandbox: tier 2's answers equal what the
// preamble's __interfaces and __getToolInterface return in the sandbox.
func TestIntrospectionMatchesSandbox(t *testing.T) {
	backends := []bridge.Backend{
		{Name: "exa", Tools: []manifest.Tool{
			{Name: "search", Description: "Search.", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"maximum":1.0,"x":1e300}},"required":["q"],"2":{}}`)},
			{Name: "get-page", Description: "Get <page> & \"more\"", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}},
		{Name: "my-backend", Tools: []manifest.Tool{
			{Name: "search", Description: "Other.", InputSchema: json.RawMessage(`{}`)},
			{Name: "10", Description: "Ten.", InputSchema: json.RawMessage(`bad`)},
		}},
	}
	sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{
		`return __interfaces`,
		`return Object.keys(__interfaces)`,
		`return Object.keys(__interfaces["my-backend"])`,
		`return __interfaces.exa.search.input_schema`,
		`return __interfaces.exa.search.input_schema.required.length`,
		`return __interfaces.exa.nope`,
		`return __getToolInterface("exa.search")`,
		`return __getToolInterface("my_backend.search")`,
		`return __getToolInterface("exa.get_page")`,
		`return __getToolInterface("search")`,
		`return __getToolInterface("_10")`,
		`return __getToolInterface("nope")`,
	} {
		in, ok := ParseIntrospection(code)
		if !ok {
			t.Fatalf("tier 2 does not recognize %q", code)
		}
		want, ok := in.Answer(backends)
		if !ok {
			t.Fatalf("%q: tier 2 cannot answer", code)
		}
		out, err := sb.Run(t.Context(), code, sandbox.RunOptions{})
		if err != nil || out.IsError {
			t.Fatalf("%q: sandbox: %v %+v", code, err, out)
		}
		if string(out.Value) != string(want) {
			t.Errorf("%q:\ntier 2:  %s\nsandbox: %s", code, want, out.Value)
		}
	}
}

// FuzzLiteralMatchesSandbox: whenever tier 2 accepts code, the sandbox makes
// the same single call with the same bytes.
func FuzzLiteralMatchesSandbox(f *testing.F) {
	backends := []bridge.Backend{
		{Name: "exa", Tools: []manifest.Tool{{Name: "search", InputSchema: json.RawMessage(`{}`)}}},
		{Name: "my-backend", Tools: []manifest.Tool{{Name: "get data", InputSchema: json.RawMessage(`{}`)}}},
	}
	table := bridge.Lookup(backends)
	rec := &recorder{}
	sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: rec})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`const r = await exa.search({q: "a", n: [1, 2.5e3, -0x1f], 'b': {c: null,},}); return r;`,
		"let x = exa.search({s: 'it\\'s \\u{1F600}'})\nreturn x",
		`return await globalThis['my-backend']["get data"]({1: 2, a: 3})`,
		`exa.search()`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		sc, ok := ParseLiteralCall(code)
		if !ok {
			return
		}
		backend, tool, ok := table.Resolve(sc.Object, sc.Tool)
		if !ok {
			return
		}
		rec.mu.Lock()
		rec.calls = nil
		rec.mu.Unlock()
		out, err := sb.Run(context.Background(), code, sandbox.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := backend + "." + tool + " " + string(sc.Args)
		if out.IsError || len(rec.calls) != 1 || rec.calls[0] != want {
			t.Fatalf("%q:\ntier 2:  %q\nsandbox: %q %s", code, want, rec.calls, out.Error)
		}
	})
}
