package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// benchBackends is a realistic tool set: 10 backends of 20 tools with
// small schemas (a 60–80 KB preamble).
func benchBackends() []bridge.Backend {
	var out []bridge.Backend
	for b := range 10 {
		be := bridge.Backend{Name: fmt.Sprintf("backend-%d", b)}
		for i := range 20 {
			be.Tools = append(be.Tools, manifest.Tool{
				Name:        fmt.Sprintf("tool_%d", i),
				Description: strings.Repeat("Does one useful thing with the input. ", 4),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","minimum":1}},"required":["query"]}`),
			})
		}
		out = append(out, be)
	}
	return append(out, testBackends...)
}

func newBenchSandbox(b *testing.B) *Sandbox {
	b.Helper()
	pre := bridge.Preamble(benchBackends())
	b.Logf("preamble: %d bytes", len(pre))
	sb, err := New(Options{
		Preamble: string(pre),
		Bindings: bridge.Lookup(benchBackends()).Bindings(),
		Caller: callerFunc(func(_ context.Context, _, _ string, args json.RawMessage) (*toolcall.Result, error) {
			return &toolcall.Result{StructuredContent: args}, nil
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	return sb
}

const (
	threeCallsJS = `const [a, b] = await Promise.all([exa.search({q: "a"}), exa.search({q: "b"})]);
const c = await github.create_issue({title: a.q + b.q});
return {a, b, c};`
	threeCallsTS = `type R = {q: string};
const [a, b]: R[] = await Promise.all([exa.search({q: "a"}), exa.search({q: "b"})]);
const c = await github.create_issue({title: a.q + b.q}) as {title: string};
return {a, b, c};`
)

// benchRuns runs code b.N times and reports latency percentiles. With
// warm set, each run starts once the runtime pool is full again, as it is
// between requests; without it runs go back to back and the pool refills
// compete with them for the CPU.
func benchRuns(b *testing.B, sb *Sandbox, warm bool, code func(i int) string) {
	b.ReportAllocs()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		if warm {
			b.StopTimer()
			for len(sb.warm) == 0 || sb.refilling.Load() > 0 {
				time.Sleep(50 * time.Microsecond)
			}
			b.StartTimer()
		}
		start := time.Now()
		out, err := sb.Run(context.Background(), code(i), RunOptions{})
		lat = append(lat, time.Since(start))
		if err != nil || out.IsError {
			b.Fatalf("%v %+v", err, out)
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRunThreeCalls is the headline number: runtime, hardening,
// preamble, (transpile) and three tool calls, two of them concurrent.
func BenchmarkRunThreeCalls(b *testing.B) {
	sb := newBenchSandbox(b)
	for _, warm := range []bool{true, false} {
		mode := "warm"
		if !warm {
			mode = "back-to-back"
		}
		b.Run(mode+"/js", func(b *testing.B) { benchRuns(b, sb, warm, func(int) string { return threeCallsJS }) })
		b.Run(mode+"/ts-cached", func(b *testing.B) { benchRuns(b, sb, warm, func(int) string { return threeCallsTS }) })
		b.Run(mode+"/js-uncached", func(b *testing.B) {
			benchRuns(b, sb, warm, func(i int) string { return threeCallsJS + fmt.Sprintf("\n// %d", i) })
		})
		b.Run(mode+"/ts-uncached", func(b *testing.B) {
			benchRuns(b, sb, warm, func(i int) string { return threeCallsTS + fmt.Sprintf("\n// %d", i) })
		})
	}
}

func BenchmarkRunParallel(b *testing.B) {
	sb := newBenchSandbox(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			out, err := sb.Run(context.Background(), threeCallsJS, RunOptions{})
			if err != nil || out.IsError {
				b.Errorf("%v %+v", err, out)
				return
			}
		}
	})
}

// BenchmarkSetup splits the fixed cost of a run.
func BenchmarkSetup(b *testing.B) {
	pre := bridge.Preamble(benchBackends())
	prePrg := goja.MustCompile("p.js", string(pre), false)
	b.Run("goja.New", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			goja.New()
		}
	})
	b.Run("preamble", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt := goja.New()
			_ = rt.Set("__kiln_call", func(goja.FunctionCall) goja.Value { return goja.Undefined() })
			if _, err := rt.RunProgram(prePrg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("harden", func(b *testing.B) {
		b.ReportAllocs()
		sb := &Sandbox{lim: Limits{}.withDefaults(), preamble: &preamble{}}
		for b.Loop() {
			if _, err := sb.prepare(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("harden+preamble", func(b *testing.B) {
		b.ReportAllocs()
		sb := newBenchSandbox(b)
		for b.Loop() {
			if _, err := sb.prepare(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("esbuild", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if u, msg := transpile(threeCallsTS + fmt.Sprintf("\n// %d", i)); u == nil {
				b.Fatal(msg)
			}
		}
	})
	b.Run("goja-compile", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if u, msg := transpile(threeCallsJS + fmt.Sprintf("\n// %d", i)); u == nil {
				b.Fatal(msg)
			}
		}
	})
	b.Run("shape-check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkShape(threeCallsTS, 1<<20, 1000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("watchdog-sample", func(b *testing.B) {
		for b.Loop() {
			liveHeap()
		}
	})
}

// BenchmarkCaps measures what the capped builtins cost scripts, against a
// bare goja runtime.
func BenchmarkCaps(b *testing.B) {
	sb := newBenchSandbox(b)
	hot := map[string]string{
		"array-methods": `const a = Array.from({length: 1000}, (_, i) => i); let s = 0; for (let k = 0; k < 200; k++) s += a.map(x => x * 2).filter(x => x % 3).slice(1).indexOf(7) + a.join(",").length; return s`,
		"for-of":        `const a = Array.from({length: 1000}, (_, i) => i); let s = 0; for (let k = 0; k < 200; k++) for (const x of a) s += x; return s`,
		"regexp":        `let n = 0; for (let k = 0; k < 20000; k++) if (/b(c+)d/.test("abcccde" + k)) n++; return n`,
		"replace":       `let s = ""; for (let k = 0; k < 5000; k++) s = ("item-" + k).replace(/-(\d+)/, "[$1]"); return s`,
		"stringify":     `const o = Array.from({length: 2000}, (_, i) => ({id: i, name: "item " + i, tags: ["a", "b"], ok: true})); let n = 0; for (let k = 0; k < 10; k++) n += JSON.stringify(o).length; return n`,
		"parse":         `const t = JSON.stringify(Array.from({length: 2000}, (_, i) => ({id: i, name: "item " + i}))); let n = 0; for (let k = 0; k < 10; k++) n += JSON.parse(t).length; return n`,
	}
	names := make([]string, 0, len(hot))
	for n := range hot {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		code := hot[name]
		b.Run(name+"/sandbox", func(b *testing.B) {
			for b.Loop() {
				if out, _ := sb.Run(context.Background(), code, RunOptions{}); out.IsError {
					b.Fatal(out.Error)
				}
			}
		})
		b.Run(name+"/bare-goja", func(b *testing.B) {
			prg := goja.MustCompile("x.js", "(() => {"+code+"})()", false)
			for b.Loop() {
				if _, err := goja.New().RunProgram(prg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBridgeNames is what the names error hints need costs: a new
// sandbox (each worker start), a run whose extra preamble (backends
// registered at run time) is new (the first run after each change), and a
// run through a worker with the same extra preamble as the last (every run
// while a registered backend is live).
func BenchmarkBridgeNames(b *testing.B) {
	pre, bindings := string(bridge.Preamble(benchBackends())), bridge.Lookup(benchBackends()).Bindings()
	caller := callerFunc(func(_ context.Context, _, _ string, args json.RawMessage) (*toolcall.Result, error) {
		return &toolcall.Result{StructuredContent: args}, nil
	})
	b.Run("new-sandbox", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := New(Options{Preamble: pre, Bindings: bindings, Caller: caller, Limits: Limits{WarmRuntimes: -1}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new-extra", func(b *testing.B) {
		sb, err := New(Options{Preamble: pre, Bindings: bindings, Caller: caller, Limits: Limits{WarmRuntimes: -1}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			extra := pre + fmt.Sprintf("\n// %d", i)
			if out, err := sb.Run(context.Background(), threeCallsJS, RunOptions{ExtraPreamble: extra, ExtraBindings: bindings}); err != nil || out.IsError {
				b.Fatalf("%v %+v", err, out)
			}
		}
	})
	b.Run("worker-extra", func(b *testing.B) {
		p, err := NewPool(Options{Preamble: pre, Bindings: bindings, Caller: caller}, WorkerOptions{Command: workerCommand})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		b.ReportAllocs()
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if out, err := p.Run(context.Background(), threeCallsJS, RunOptions{ExtraPreamble: pre, ExtraBindings: bindings}); err != nil || out.IsError {
				b.Fatalf("%v %+v", err, out)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	})
}
