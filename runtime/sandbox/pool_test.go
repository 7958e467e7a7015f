package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// workerCommand starts this test binary as a worker (see TestMain).
func workerCommand() *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exec.Command(self, "sandbox-worker")
}

func newTestPool(t testing.TB, lim Limits, fn func(context.Context, string, string, json.RawMessage) (*toolcall.Result, error)) (*Pool, *fakeCaller) {
	t.Helper()
	if fn == nil {
		fn = echo
	}
	fc := &fakeCaller{fn: fn}
	p, err := NewPool(Options{
		Preamble: string(bridge.Preamble(testBackends)), Bindings: bridge.Lookup(testBackends).Bindings(),
		Caller:   fc,
		Limits:   lim,
		Backends: func() []string { return []string{"exa", "my-backend", "github", "slack"} },
	}, WorkerOptions{Command: workerCommand})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, fc
}

// comparable is an Outcome without its timing, with Cause reduced to its
// sentinel and text.
type comparable struct {
	Value, Error, Cause string
	Logs                []string
	Calls, Refused      int
	IsError             bool
	Sentinel            int
}

func compareView(o *Outcome) comparable {
	w := fromOutcome(o)
	return comparable{Value: string(o.Value), Error: o.Error, Cause: w.Cause, Logs: o.Logs, Calls: o.Calls, Refused: o.Refused, IsError: o.IsError, Sentinel: w.Kind}
}

// TestPoolCallPanicIsTheCallsError: a tool call that panics in kiln's
// process, where the pool makes a worker's calls on goroutines of their
// own, rejects that call's promise as an in-process run's does; before, it
// ended kiln.
func TestPoolCallPanicIsTheCallsError(t *testing.T) {
	panics := func(context.Context, string, string, json.RawMessage) (*toolcall.Result, error) {
		panic("a bad answer")
	}
	sb, _ := newTestSandbox(t, Limits{}, panics)
	pool, _ := newTestPool(t, Limits{}, panics)
	got := runBoth(t, sb, pool, `try { await exa.search({q: "x"}); return "resolved" } catch (e) { return String(e.message) }`)
	if !strings.Contains(string(got.Value), "the backend call failed with an internal error in kiln") || strings.Contains(string(got.Value), "a bad answer") {
		t.Errorf("the script saw %s; want the call rejected, the panic's value kept in kiln's log", got.Value)
	}
}

// runBoth runs code in-process and in a worker, checks that the outcomes
// are the same, and returns the worker's.
func runBoth(t *testing.T, sb *Sandbox, pool *Pool, code string) *Outcome {
	t.Helper()
	want, err := sb.Run(t.Context(), code, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := pool.Run(t.Context(), code, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(compareView(want), compareView(got)); d != "" {
		t.Errorf("worker outcome differs from in-process (-want +got):\n%s", d)
	}
	return got
}

// TestPoolMatchesInProcess: a worker gives the model exactly the outcome
// the in-process engine gives, values, logs, errors, stacks and hints.
func TestPoolMatchesInProcess(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	pool, _ := newTestPool(t, Limits{}, nil)
	for _, code := range []string{
		`return 1 + 1`,
		`let n = 0; for (let i = 0; i < 52; i++) { try { await exa.search({i}) } catch { n++ } } return n`,
		`return {a: [1, "two", null], s: "<b>&</b>", u: "é\u2028"}`,
		`const r = await exa.search({q: "kiln"}); console.log("got", r.args.q); console.warn("w"); return r`,
		`await exa.search({q: 1})`,
		`const [a, b] = await Promise.all([exa.search({q: "a"}), github.create_issue({title: "b"})]); return [a, b]`,
		`type R = {q: string};
const r: R = (await exa.search({q: "ts"})).args as R;
return r.q`,
		`export default async function main() { return await exa.text({}) }`,
		`return await exa.jsontext({})`,
		`return await exa.image({})`,
		`await exa.fail({})`,
		`await exa.down({})`,
		`const x = 1;
throw new Error("boom at line 2")`,
		`function f() { return undefined.x }
return f()`,
		`return await exaa.search({})`,
		`return await exa.serch({})`,
		`return (`,
		`for (let i = 0; i < 51; i++) await exa.search({i})`,
		`await new Promise(() => {})`,
		`return () => 1`,
		``,
		`return __getToolInterface("exa.search")`,
	} {
		t.Run(firstLine(code), func(t *testing.T) { runBoth(t, sb, pool, code) })
	}
}

// TestPoolKernelLimits runs programs whose native work goja cannot
// interrupt; each gets a memory or timeout error (a timeout when the race
// detector slows it down), the worker is replaced, and the next run is
// normal.
func TestPoolKernelLimits(t *testing.T) {
	pool, _ := newTestPool(t, Limits{Memory: 64 << 20, MaxConcurrent: 2}, nil)
	for _, tc := range []struct {
		name    string
		code    string
		timeout time.Duration
		causes  []error
	}{
		{"string doubling", `let s = 'x'; for (let i = 0; i < 40; i++) s = s + s; return s.length;`, 10 * time.Second, []error{ErrMemory, ErrTimeout}},
		{"array growth", `const a = []; for (let i = 0; ; i++) a.push({i, s: "y" + i}); return a.length`, 10 * time.Second, []error{ErrMemory, ErrTimeout}},
		{"stringify of a huge structure", `const a = []; for (let i = 0; i < 3e5; i++) a.push({k: "v".repeat(100) + i}); return JSON.stringify(a).length`, 10 * time.Second, []error{ErrMemory, ErrThrown, ErrTimeout}},
		{"repeat into an array", `const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length)`, 10 * time.Second, []error{ErrMemory, ErrTimeout}},
		{"regex replace growth", `let s = "ab".repeat(1 << 18); for (;;) s = s.replace(/a/g, "aa")`, 10 * time.Second, []error{ErrMemory, ErrThrown, ErrTimeout}},
		{"native sort past the deadline", `const a = "zyxwvutsrqponmlkjihgfedcba9876543210".repeat(3e4).split(""); a.sort(); return a.length`, 300 * time.Millisecond, []error{ErrTimeout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := pool.replaced()
			out, err := pool.Run(t.Context(), tc.code, RunOptions{Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v %s", out.Duration.Round(time.Millisecond), firstLine(out.Error))
			ok := false
			for _, c := range tc.causes {
				ok = ok || errors.Is(out.Cause, c)
			}
			if !out.IsError || !ok {
				t.Fatalf("outcome %s %q (cause %v), want one of %v", out.Value, out.Error, out.Cause, tc.causes)
			}
			if errors.Is(out.Cause, ErrMemory) && !strings.Contains(out.Error, "memory budget") {
				t.Errorf("memory error does not say so: %s", out.Error)
			}
			if (errors.Is(out.Cause, ErrMemory) || errors.Is(out.Cause, ErrTimeout)) && pool.replaced() == before {
				t.Errorf("the worker that passed its limit was not replaced")
			}
			out, err = pool.Run(t.Context(), `return (await exa.search({ok: 1})).args.ok`, RunOptions{})
			if err != nil || out.IsError || string(out.Value) != "1" {
				t.Fatalf("next run: %v %+v", err, out)
			}
		})
	}
}

// replaced counts workers retired so far.
func (p *Pool) replaced() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired
}

// TestPoolOtherRunsContinue: a run bombing its worker does not stop a run
// on another worker.
func TestPoolOtherRunsContinue(t *testing.T) {
	pool, _ := newTestPool(t, Limits{Memory: 32 << 20, MaxConcurrent: 3}, echo)
	var wg sync.WaitGroup
	bombs := make([]*Outcome, 2)
	for i := range bombs {
		wg.Go(func() {
			bombs[i], _ = pool.Run(t.Context(), `let s = 'x'; for (let i = 0; i < 40; i++) s = s + s; return s.length;`, RunOptions{Timeout: 10 * time.Second})
		})
	}
	for range 20 {
		out, err := pool.Run(t.Context(), `const r = await exa.sleep({n: 1}); return r.args.n`, RunOptions{})
		if err != nil || out.IsError || string(out.Value) != "1" {
			t.Fatalf("run beside the bombs: %v %+v", err, out)
		}
	}
	wg.Wait()
	for _, b := range bombs {
		if b == nil || !errors.Is(b.Cause, ErrMemory) {
			t.Errorf("bomb outcome %+v, want ErrMemory", b)
		}
	}
}

// TestPoolCancel: a client's cancel reaches the backend call through the
// worker, and the worker serves the next run.
func TestPoolCancel(t *testing.T) {
	pool, fc := newTestPool(t, Limits{}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for fc.active.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	out, err := pool.Run(ctx, `await exa.wait({})`, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out.Cause, ErrCanceled) {
		t.Fatalf("cause %v, want ErrCanceled: %s", out.Cause, out.Error)
	}
	// The run may end before the canceled backend call has returned.
	for fc.active.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	if fc.canceled.Load() != 1 {
		t.Errorf("%d backend calls saw the cancel, want 1", fc.canceled.Load())
	}
	expectPoolValue(t, pool, `return 2`, `2`)

	// A cancel that lands right behind the run reaches the worker too: the
	// run ends canceled and the worker is not killed for it.
	before := pool.replaced()
	done, stop := context.WithCancel(t.Context())
	stop()
	out, err = pool.Run(done, `while (true) {}`, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out.Cause, ErrCanceled) || pool.replaced() != before {
		t.Fatalf("pre-canceled run: cause %v (%s), %d workers replaced", out.Cause, out.Error, pool.replaced()-before)
	}
}

// TestPoolTimeoutCancelsCalls: at the deadline the backend call in flight
// is canceled.
func TestPoolTimeoutCancelsCalls(t *testing.T) {
	pool, fc := newTestPool(t, Limits{}, nil)
	out, err := pool.Run(t.Context(), `await exa.wait({})`, RunOptions{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out.Cause, ErrTimeout) || !strings.Contains(out.Error, "waiting for 1 tool calls") {
		t.Fatalf("cause %v: %s", out.Cause, out.Error)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fc.active.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if fc.canceled.Load() != 1 {
		t.Errorf("%d backend calls saw the deadline, want 1", fc.canceled.Load())
	}
}

// TestPoolWorkerStartFails: a worker that cannot start fails Ready with
// a message naming the command, and a run fails as a gateway problem,
// never a silent in-process fallback.
func TestPoolWorkerStartFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  func() *exec.Cmd
		says string
	}{
		{"missing binary", func() *exec.Cmd { return exec.Command("/nonexistent/kiln", "sandbox-worker") }, "/nonexistent/kiln"},
		{"exits at once", func() *exec.Cmd { return exec.Command("/bin/sh", "-c", "echo broken >&2; exit 3") }, "broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPool(Options{Caller: &fakeCaller{fn: echo}}, WorkerOptions{Command: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			err = p.Ready(t.Context())
			if err == nil || !strings.Contains(err.Error(), "start a worker process") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Ready error = %v, want one about starting the worker mentioning %q", err, tc.says)
			}
			out, err := p.Run(t.Context(), `return 1`, RunOptions{})
			if err != nil || !out.IsError || !errors.Is(out.Cause, ErrInternal) || !strings.Contains(out.Error, "gateway problem") {
				t.Fatalf("Run after a failed start = %v %+v, want an internal error", err, out)
			}
			if !strings.Contains(out.Cause.Error(), tc.says) {
				t.Errorf("the cause %q does not carry the worker's error %q", out.Cause, tc.says)
			}
		})
	}
}

func expectPoolValue(t *testing.T, p *Pool, code, want string) {
	t.Helper()
	out, err := p.Run(t.Context(), code, RunOptions{})
	if err != nil || out.IsError || string(out.Value) != want {
		t.Fatalf("Run(%q) = %v %+v, want %s", code, err, out, want)
	}
}

// TestPoolDynamicPreamble: backends registered at run time reach the
// worker with the run, and only that run.
func TestPoolDynamicPreamble(t *testing.T) {
	pool, fc := newTestPool(t, Limits{}, nil)
	manual := []bridge.Backend{{Name: "manual", Tools: []manifest.Tool{{Name: "ping", InputSchema: json.RawMessage(`{}`)}}}}
	extra, bindings := string(bridge.Preamble(manual)), bridge.Lookup(manual).Bindings()
	out, err := pool.Run(t.Context(), `return (await manual.ping({x: 1})).tool`, RunOptions{ExtraPreamble: extra, ExtraBindings: bindings})
	if err != nil || out.IsError || string(out.Value) != `"manual.ping"` {
		t.Fatalf("Run: %v %+v", err, out)
	}
	if got := fc.log(); len(got) != 1 || got[0] != `manual.ping {"x":1}` {
		t.Fatalf("calls = %q", got)
	}
	out, err = pool.Run(t.Context(), `return await manual.ping({})`, RunOptions{})
	if err != nil || !errors.Is(out.Cause, ErrThrown) || !strings.Contains(out.Error, "manual is not defined") {
		t.Fatalf("without the extra preamble: %v %+v", err, out)
	}
	// The extra preamble's bindings travel with it, so the worker's hints
	// know the registered backend's tools.
	out, err = pool.Run(t.Context(), `return await manual.pong({})`, RunOptions{ExtraPreamble: extra, ExtraBindings: bindings})
	if want := "backend manual has no tool pong; did you mean ping?"; err != nil || !strings.Contains(out.Error, want) {
		t.Fatalf("hint for a registered backend: %v %+v, want %q", err, out, want)
	}
}

// TestTailBuffer: a worker's stderr keeps its first and last bytes (the
// crash reason and the end of the dump) and forwards its log records.
func TestTailBuffer(t *testing.T) {
	var records []string
	tb := &tailBuffer{max: 16, record: func(l string) { records = append(records, l) }}
	for _, w := range []string{"fatal error: out", " of memory\n", "goroutine 1 [running]:\n", strings.Repeat("x", 40) + "\n", "time=1 level=WARN msg=", "hi\n", "end"} {
		if _, err := tb.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	got := tb.String()
	if !strings.HasPrefix(got, "fatal error: out") || !strings.HasSuffix(got, "msg=hi\nend") || !strings.Contains(got, " … ") {
		t.Errorf("String() = %q", got)
	}
	if d := cmp.Diff([]string{"time=1 level=WARN msg=hi"}, records); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
}

// TestPoolBudgetIsUsable: the kernel limit leaves a program the whole of
// its budget: 30 MiB of live strings fit in a 50 MiB budget. The strings
// are built by doubling, not "x".repeat(1 << 20): goja's repeat appends
// one copy at a time, and under -race those 30 million instrumented
// appends took 3.5 s a run, past the 30 s timeout on a loaded machine,
// although what is measured here is memory.
func TestPoolBudgetIsUsable(t *testing.T) {
	pool, _ := newTestPool(t, Limits{Memory: 50 << 20}, nil)
	for range 3 {
		expectPoolValue(t, pool, `let s = "x"; while (s.length < 1 << 20) s += s; const a = []; for (let i = 0; i < 30; i++) a.push(s + i); return a.reduce((n, s) => n + s.length, 0)`, "31457330")
	}
}
