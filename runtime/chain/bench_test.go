package chain

import (
	"testing"
)

// BenchmarkTiers measures call_tool_chain's own cost per tier, backend time
// excluded (the recorder answers at once): parsing, resolution, argument
// validation is the dispatcher's and not included, and the output pipeline.
func BenchmarkTiers(b *testing.B) {
	e, rec := newEngine(b)
	for _, bc := range []struct{ name, code string }{
		{"tier1-json", `{"tool":"my-backend.web_search","arguments":{"query":"kiln"}}`},
		{"tier2-simple", `const r = await my_backend.web_search({query: 'kiln'}); return r;`},
		{"tier2-introspection", `__getToolInterface("my-backend.web_search")`},
		{"tier3-three-calls", `const [a, c] = await Promise.all([my_backend.web_search({query: "a"}), my_backend.get_data({})]);
const d = await my_backend.web_search({query: "b"}); return [a, c, d].length;`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := e.Run(b.Context(), Request{Code: bc.code}); r.IsError {
					b.Fatalf("%s: %s", bc.name, r.TextContent())
				}
			}
			rec.mu.Lock()
			rec.calls = rec.calls[:0]
			rec.mu.Unlock()
		})
	}
}
