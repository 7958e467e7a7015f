package chain

import (
	"context"
	"testing"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/telemetry"
)

// BenchmarkTiersTelemetry is BenchmarkTiers' tier-1 and tier-3 cases with
// kiln serve's telemetry wired in as cmd/kiln does (meta-tool, tier and
// backend call hooks, metrics on), so the two compare as before/after. The
// traced case exports to a port where nothing listens: spans are built
// and batched, and the export fails off the measured path.
func BenchmarkTiersTelemetry(b *testing.B) {
	for _, mode := range []string{"metrics", "metrics+traces"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "metrics+traces" {
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
			}
			tel, err := telemetry.New(b.Context(), "bench", telemetry.NewMetrics(telemetry.MetricsOptions{
				Known: map[string][]string{"my-backend": {"web_search", "get-data"}}}), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			e, rec := newEngine(b)
			caller := tel.Caller(rec)
			backends := e.opts.Catalog.View().Bridge
			sb, err := sandbox.New(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: caller})
			if err != nil {
				b.Fatal(err)
			}
			e.opts.Caller, e.opts.Sandbox = caller, tel.Sandbox(sb)
			e.opts.OnTier = func(ctx context.Context, t Tier) (context.Context, func()) { return tel.EnterTier(ctx, int(t)) }
			for _, bc := range []struct{ name, code string }{
				{"tier1-json", `{"tool":"my-backend.web_search","arguments":{"query":"kiln"}}`},
				{"tier3-three-calls", `const [a, c] = await Promise.all([my_backend.web_search({query: "a"}), my_backend.get_data({})]);
const d = await my_backend.web_search({query: "b"}); return [a, c, d].length;`},
			} {
				b.Run(bc.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						ctx, end := tel.StartTool(b.Context(), "call_tool_chain", "", "")
						r := e.Run(ctx, Request{Code: bc.code})
						end(r.IsError)
						if r.IsError {
							b.Fatalf("%s: %s", bc.name, r.TextContent())
						}
					}
					rec.mu.Lock()
					rec.calls = rec.calls[:0]
					rec.mu.Unlock()
				})
			}
		})
	}
}
