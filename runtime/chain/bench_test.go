package chain

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/sandbox"
)

// TestMain lets this test binary serve as the sandbox worker that the
// worker-mode benchmarks start (os.Executable() sandbox-worker).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		os.Exit(sandbox.ServeWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newWorkerEngine is newEngine with tier 3 in worker processes, as kiln
// serve runs it.
func newWorkerEngine(b *testing.B) (*Engine, *recorder) {
	b.Helper()
	tools := []manifest.Tool{
		{Name: "web_search", Description: "Searches the web.", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)},
		{Name: "get-data", Description: "Gets data.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "my-backend", Tools: tools}, true); err != nil {
		b.Fatal(err)
	}
	backends := []bridge.Backend{{Name: "my-backend", Tools: tools}}
	rec := &recorder{}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	pool, err := sandbox.NewPool(sandbox.Options{Preamble: string(bridge.Preamble(backends)), Bindings: bridge.Lookup(backends).Bindings(), Caller: rec},
		sandbox.WorkerOptions{Command: func() *exec.Cmd { return exec.Command(self, "sandbox-worker") }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	return New(Options{Caller: rec, Registry: reg, Catalog: catalogOf(b, reg), Sandbox: pool}), rec
}

// BenchmarkTiers measures call_tool_chain's own cost per tier, backend time
// excluded (the recorder answers at once): parsing, resolution, argument
// validation is the dispatcher's and not included, and the output pipeline.
// Tier 3 runs in-process and in a warm worker process, as kiln serve runs
// it; p50-µs is the median latency of one request.
func BenchmarkTiers(b *testing.B) {
	inProcess, rec := newEngine(b)
	worker, wrec := newWorkerEngine(b)
	for _, bc := range []struct {
		name, code string
		tier3      bool
	}{
		{"tier1-json", `{"tool":"my-backend.web_search","arguments":{"query":"kiln"}}`, false},
		{"tier2-literal", `const r = await my_backend.web_search({query: 'kiln'}); return r;`, false},
		{"tier2-introspection", `__getToolInterface("my-backend.web_search")`, false},
		{"tier3-one-call", `const q = "kiln";
const r = await my_backend.web_search({query: q}); return r;`, true},
		{"tier3-three-calls", `const [a, c] = await Promise.all([my_backend.web_search({query: "a"}), my_backend.get_data({})]);
const d = await my_backend.web_search({query: "b"}); return [a, c, d].length;`, true},
	} {
		engines := []struct {
			mode string
			e    *Engine
			rec  *recorder
		}{{"in-process", inProcess, rec}, {"worker", worker, wrec}}
		if !bc.tier3 {
			engines = engines[:1]
		}
		for _, en := range engines {
			b.Run(bc.name+"/"+en.mode, func(b *testing.B) {
				b.ReportAllocs()
				var lat []time.Duration
				for b.Loop() {
					start := time.Now()
					if r := en.e.Run(b.Context(), Request{Code: bc.code}); r.IsError {
						b.Fatalf("%s: %s", bc.name, r.TextContent())
					}
					lat = append(lat, time.Since(start))
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				en.rec.mu.Lock()
				en.rec.calls = en.rec.calls[:0]
				en.rec.mu.Unlock()
			})
		}
	}
}
