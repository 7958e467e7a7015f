package chain

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// recorder stands in for the dispatcher and remembers what was called, so
// a test can tell a wrong call from a right one.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) CallTool(_ context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, backend+"."+tool+" "+string(args))
	return toolcall.Text(`{"echo":` + string(args) + `}`), nil
}

func newEngine(t testing.TB) (*Engine, *recorder) {
	t.Helper()
	tools := []manifest.Tool{
		{Name: "web_search", Description: "Searches the web.", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
		{Name: "get-data", Description: "Gets data.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "my-backend", Tools: tools}, true); err != nil {
		t.Fatal(err)
	}
	backends := []bridge.Backend{{Name: "my-backend", Tools: tools}}
	rec := &recorder{}
	sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: rec})
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Caller: rec, Registry: reg, Catalog: catalogOf(t, reg), Sandbox: sb}), rec
}

// catalogOf is the real catalog over reg's backends, all named in its
// config; its view holds the bridge the sandbox preamble binds.
func catalogOf(t testing.TB, reg *registry.Registry) *catalog.Catalog {
	t.Helper()
	cfg := &config.Config{Gateway: config.DefaultGateway()}
	for _, b := range reg.Backends() {
		cfg.Backends = append(cfg.Backends, config.Backend{Name: b.Name(), Enabled: true})
	}
	return catalog.New(catalog.Options{Registry: reg, Config: cfg, Search: catalog.Lexical(search.Build(nil))})
}

func tierOf(t *testing.T, r *toolcall.Result) Tier {
	t.Helper()
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(r.Meta, &meta); err != nil {
		t.Fatalf("result has no _meta: %v", err)
	}
	var tier Tier
	if err := json.Unmarshal(meta["kiln/tier"], &tier); err != nil {
		t.Fatalf("_meta has no kiln/tier: %s", r.Meta)
	}
	return tier
}

func TestTierSelection(t *testing.T) {
	tests := []struct {
		name, code string
		tier       Tier
		call       string // the one backend call expected, "" for none
		text       string // substring of the result text
	}{
		{"json", `{"tool":"my-backend.web_search","arguments":{"query":"q"}}`, TierJSON, `my-backend.web_search {"query":"q"}`, ""},
		{"const and return", `const r = await my_backend.web_search({query: 'q'}); return r;`, TierLiteral, `my-backend.web_search {"query":"q"}`, ""},
		{"return await", `return await my_backend.web_search({"query": "q",})`, TierLiteral, `my-backend.web_search {"query":"q"}`, ""},
		{"bare call", `my_backend.get_data()`, TierLiteral, `my-backend.get-data {}`, ""},
		{"globalThis with original names", `await globalThis['my-backend']['get-data']({n: -1.5e3})`, TierLiteral, `my-backend.get-data {"n":-1500}`, ""},
		{"introspection", `__getToolInterface("my-backend.web_search")`, TierLiteral, "", "Searches the web."},
		{"interfaces keys", `Object.keys(__interfaces["my-backend"])`, TierLiteral, "", "get-data"},
		// Near misses: each must reach the sandbox, never a wrong tier-2 call.
		{"template literal argument", "return await my_backend.web_search({query: `q`})", TierSandbox, `my-backend.web_search {"query":"q"}`, ""},
		{"computed argument", `return await my_backend.web_search({query: "a" + "b"})`, TierSandbox, `my-backend.web_search {"query":"ab"}`, ""},
		{"returns another name", `const r = await my_backend.get_data(); return 42;`, TierSandbox, `my-backend.get-data {}`, "42"},
		{"two statements", `const a = 1; return await my_backend.get_data({a})`, TierSandbox, `my-backend.get-data {"a":1}`, ""},
		{"unknown backend gets hints", `return await my_backendd.get_data()`, TierSandbox, "", "my_backend"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := newEngine(t)
			r := e.Run(t.Context(), Request{Code: tc.code})
			if got := tierOf(t, r); got != tc.tier {
				t.Errorf("tier = %d, want %d (result %s)", got, tc.tier, r.TextContent())
			}
			var want []string
			if tc.call != "" {
				want = []string{tc.call}
			}
			if strings.Join(rec.calls, "|") != strings.Join(want, "|") {
				t.Errorf("calls = %q, want %q", rec.calls, want)
			}
			if !strings.Contains(r.TextContent(), tc.text) {
				t.Errorf("result lacks %q:\n%s", tc.text, r.TextContent())
			}
		})
	}
}

func TestScrubBeforeTruncation(t *testing.T) {
	const secret = "kiln-test-secret-0123456789abcdef"
	e, _ := newEngine(t)
	e.opts.Scrub = scrub.New(scrub.Options{Values: []scrub.Value{{Name: "API_TOKEN", Value: secret}}}).Result
	e.opts.Output.SizeFooter = false
	// Truncation keeps a head and a tail; across these caps its cut moves
	// through the secret. Scrubbed after truncation, 39 of them leaked a
	// part of it.
	for cut := 100; cut < 1200; cut++ {
		r := e.Run(t.Context(), Request{Code: `return "x".repeat(500) + "` + secret + `" + "y".repeat(500);`, MaxOutputSize: cut})
		if text := r.TextContent(); strings.Contains(text, secret[:10]) || strings.Contains(text, secret[len(secret)-10:]) {
			t.Fatalf("max_output_size %d: part of the secret survived: %q", cut, text)
		}
	}
}

func TestProgramValueKeepsScriptOrderAndText(t *testing.T) {
	e, _ := newEngine(t)
	r := e.Run(t.Context(), Request{Code: `const v = {zeta: 1, alpha: "<a & b>"}; return v;`})
	text := r.TextContent()
	if r.IsError || !strings.Contains(text, `"<a & b>"`) || strings.Index(text, "zeta") > strings.Index(text, "alpha") {
		t.Errorf("tier-3 value re-encoded: %s", text)
	}
}

// bigText answers every call with one text block of n bytes.
type bigText int

func (n bigText) CallTool(context.Context, string, string, json.RawMessage) (*toolcall.Result, error) {
	return toolcall.Text(strings.Repeat("abcdefghij", int(n)/10)), nil
}

func TestMaxOutputSizeAboveTruncationReturnsTheWholeOutput(t *testing.T) {
	e, _ := newEngine(t)
	e.opts.Caller = bigText(500_000)
	call := `{"tool":"my-backend.get-data","arguments":{}}`
	if got := len(e.Run(t.Context(), Request{Code: call}).TextContent()); got >= 500_000 {
		t.Fatalf("without max_output_size the 500 KB output came back whole (%d bytes); the default should shorten it", got)
	}
	r := e.Run(t.Context(), Request{Code: call, MaxOutputSize: 1_000_000})
	if got := r.TextContent(); got != strings.Repeat("abcdefghij", 50_000) {
		t.Fatalf("max_output_size 1,000,000: got %d bytes, want the 500,000-byte output unchanged", len(got))
	}
	r = e.Run(t.Context(), Request{Code: call, MaxOutputSize: 100_000})
	if got := len(r.TextContent()); got > 100_000 || got < 90_000 {
		t.Fatalf("max_output_size 100,000: got %d bytes, want just under the cap", got)
	}
}

func TestTimeoutAboveMaxIsReported(t *testing.T) {
	e, _ := newEngine(t)
	r := e.Run(t.Context(), Request{Code: `{"tool":"my-backend.get-data","arguments":{}}`, Timeout: 2 * e.opts.MaxTimeout})
	if r.IsError || !strings.Contains(r.TextContent(), "above gateway.sandbox.max_timeout (5m0s); this run was limited to 5m0s") {
		t.Fatalf("a timeout above max_timeout must be reported: %s", r.TextContent())
	}
	r = e.Run(t.Context(), Request{Code: `{"tool":"my-backend.get-data","arguments":{}}`, Timeout: e.opts.MaxTimeout})
	if strings.Contains(r.TextContent(), "max_timeout") {
		t.Fatalf("a timeout within max_timeout gets no note: %s", r.TextContent())
	}
}
