package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// TestMain fixes the process-wide regexp match timeout low enough for the
// catastrophic-regex case to stay quick.
//
// Run as "sandbox-worker", the test binary is the worker NewPool starts.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-worker" {
		os.Exit(ServeWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	regexpOnce.Do(func() { regexp2.DefaultMatchTimeout = 200 * time.Millisecond })
	os.Exit(m.Run())
}

// TestHostile runs scripts written to hurt the gateway. Each must fail
// cleanly, and the sandbox must then run a normal script as before.
func TestHostile(t *testing.T) {
	// Small caps keep the cases that run up to a cap quick, with the race
	// detector too.
	sb, fc := newTestSandbox(t, Limits{Memory: 32 << 20, MaxArray: 100_000, MaxString: 1 << 20}, nil)
	bigDAG := `let x = ["aaaaaaaa"]; for (let i = 0; i < 40; i++) x = [x, x];`
	tests := []struct {
		name    string
		code    string
		timeout time.Duration
		cause   error
		says    string
	}{
		{"busy loop", `while (true) {}`, 300 * time.Millisecond, ErrTimeout, "did not finish within 300ms"},
		{"busy loop swallowing errors", `for (;;) { try { while (true) {} } catch (e) {} }`, 300 * time.Millisecond, ErrTimeout, "did not finish"},
		{"await a call that never returns", `await exa.wait({})`, 300 * time.Millisecond, ErrTimeout, "waiting for 1 tool calls"},
		{"await a promise nothing settles", `await new Promise(() => {})`, 0, ErrStalled, "never settle"},
		{"catastrophic regex", `return /^(a+)+(?=c)/.test("a".repeat(40))`, 0, ErrThrown, "regular expression ran for more than"},
		{"catastrophic regex in replace", `return ("a".repeat(40) + "!").replace(/^(a|aa)+(?=c)/, "x")`, 0, ErrThrown, "regular expression ran for more than"},
		{"repeat 2**30", `return "x".repeat(2 ** 30).length`, 0, ErrThrown, "sandbox limit"},
		{"padStart", `return "x".padStart(2 ** 31)`, 0, ErrThrown, "sandbox limit"},
		{"replace amplification", `const s = "a".repeat(1e4); return s.replace(/a/g, s).length`, 0, ErrThrown, "sandbox limit"},
		{"replace amplification with $&", `const s = "a".repeat(1e4); return s.replace(/a/g, "$&" + s).length`, 0, ErrThrown, "sandbox limit"},
		{"replaceAll amplification", `const s = "a".repeat(1e4); return s.replaceAll("a", () => s).length`, 0, ErrThrown, "sandbox limit"},
		{"join amplification", `const s = "a".repeat(1e5); return Array(1e5).fill(s).join("").length`, 0, ErrThrown, "sandbox limit"},
		{"sparse spread", `const a = []; a.length = 4e9; return [...a].length`, 0, ErrThrown, "sandbox limit"},
		{"sparse fill", `return Array(1e9).fill(0).length`, 0, ErrThrown, "sandbox limit"},
		{"apply of a huge array-like", `return Math.max.apply(null, {length: 4e9})`, 0, ErrThrown, "sandbox limit"},
		{"stringify of a shared DAG", bigDAG + `return JSON.stringify(x).length`, 0, ErrThrown, "sandbox limit"},
		{"return a shared DAG", bigDAG + `return x`, 0, ErrResult, "sandbox limit"},
		{"flat of a shared DAG", bigDAG + `return x.flat(Infinity).length`, 0, ErrThrown, "sandbox limit"},
		{"original array iterator via arguments", `function f() { return arguments[Symbol.iterator] } const v = f(); const a = []; a.length = 4e9; a.v = v; return [...{[Symbol.iterator]: () => a.v()}].length`, 300 * time.Millisecond, ErrTimeout, "did not finish"},
		{"huge RegExp source", `return new RegExp("a".repeat(1e5)).test("a")`, 0, ErrThrown, "sandbox limit"},
		{"huge pattern via match", `return "a".match("(?:a)".repeat(1e4))`, 0, ErrThrown, "sandbox limit"},
		{"deep JSON.parse", `return JSON.parse("[".repeat(1e6) + "]".repeat(1e6))`, 0, ErrThrown, "JSON nesting"},
		{"deep recursion", `function f(n) { return f(n + 1) + 1 } return f(0)`, 0, ErrThrown, "Maximum call stack size exceeded"},
		{"native recursion", `function f(n) { return [n].map(f) } return f(0)`, 0, ErrThrown, "Maximum call stack size exceeded"},
		{"deep nested join", `let x = []; for (let i = 0; i < 2e4; i++) x = [x]; return String(x).length`, 0, ErrThrown, "Maximum call stack size exceeded"},
		{"bound chain", `let f = function () { return 1 }; for (let i = 0; i < 1e5; i++) f = f.bind(null); return f()`, 0, ErrThrown, "bound functions"},
		{"giant allocation", `const a = []; for (let i = 0; ; i++) a.push("x".repeat(1 << 16) + i)`, 20 * time.Second, ErrMemory, "memory budget"},
		{"string doubling", `let s = "x".repeat(1 << 20); for (;;) s = s + s + "y"`, 20 * time.Second, ErrMemory, "memory budget"},
		{"pollute Object.prototype", `Object.prototype.polluted = 1; return ({}).polluted`, 0, nil, "null"},
		{"pollute the bridge", `exa.search = () => "hacked"; globalThis.__kiln_call = () => "evil"; Array.prototype.map = null; return (await exa.search({})).tool`, 0, nil, `"exa.search"`},
		{"redefine a tool", `Object.defineProperty(exa, "search", {value: () => 1})`, 0, ErrThrown, "TypeError"},
		{"require", `const fs = require("fs"); return fs.readFileSync("/etc/passwd", "utf8")`, 0, ErrThrown, "require is not defined"},
		{"process", `return process.env.HOME`, 0, ErrThrown, "process is not defined"},
		{"eval", `return eval("1 + 1")`, 0, ErrThrown, "eval is not defined"},
		{"Function constructor", `return new Function("return this")()`, 0, ErrThrown, "code generation from strings is disabled"},
		{"constructor of a function", `return (() => 1).constructor("return 1")()`, 0, ErrThrown, "code generation from strings is disabled"},
		{"constructor of an async function", `return (async () => 1).constructor("return 1")()`, 0, ErrThrown, "code generation from strings is disabled"},
		{"constructor via globalThis", `return globalThis.constructor.constructor("return 1")()`, 0, ErrThrown, "code generation from strings is disabled"},
		{"BigInt", `return 2n ** 4096n`, 0, ErrThrown, "BigInt is not defined"},
		{"typed arrays", `return new Uint8Array(2 ** 31).length`, 0, ErrThrown, "Uint8Array is not defined"},
		{"timers", `setTimeout(() => {}, 10)`, 0, ErrThrown, "setTimeout is not defined"},
		{"import", `import fs from "fs"; export default function main() { return fs }`, 0, ErrThrown, "require is not defined"},
		{"51 tool calls", `for (let i = 0; i < 51; i++) await exa.search({i})`, 0, ErrThrown, "already made 50 tool calls"},
		{"parser bomb parens", strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000), 0, ErrSyntax, "nests too deeply"},
		{"parser bomb unary", "return " + strings.Repeat("!", 250000) + "1", 0, ErrSyntax, "nests too deeply"},
		{"parser bomb members", "return a" + strings.Repeat(".b", 120000), 0, ErrSyntax, "nests too deeply"},
		{"parser bomb sequence", "l: {" + strings.Repeat("a,", 20000) + "a}", 0, ErrSyntax, "comma-separated"},
		{"code too large", "return 1;" + strings.Repeat(" ", 300<<10), 0, ErrSyntax, "the limit is"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fc.log())
			start := time.Now()
			out, err := sb.Run(t.Context(), tc.code, RunOptions{Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%-34s %-8v %s", tc.name, time.Since(start).Round(time.Millisecond), firstLine(out.Error+string(out.Value)))
			if tc.cause == nil {
				if out.IsError || string(out.Value) != tc.says {
					t.Fatalf("outcome = %s %s, want %s", out.Value, out.Error, tc.says)
				}
			} else if !errors.Is(out.Cause, tc.cause) || !strings.Contains(out.Error, tc.says) {
				t.Fatalf("cause %v, error:\n%s\nwant %v mentioning %q", out.Cause, out.Error, tc.cause, tc.says)
			}
			if tc.name == "51 tool calls" && len(fc.log())-before != 50 {
				t.Fatalf("%d calls reached the backend, want 50", len(fc.log())-before)
			}
			// The sandbox still works, with a clean runtime.
			expectValue(t, sb, `return [typeof ({}).polluted, (await exa.search({ok: 1})).args.ok, "ab".repeat(2)]`, `["undefined",1,"abab"]`)
		})
	}
}

// TestSourceMapCommentReadsNoFile: goja would follow a sourceMappingURL
// comment to the filesystem; a FIFO would block that read forever.
func TestSourceMapCommentReadsNoFile(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	fifo := filepath.Join(t.TempDir(), "map")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, code := range []string{
		"return 1\n//# sourceMappingURL=" + fifo,
		"const x: number = 1; return x\n//# sourceMappingURL=" + fifo,
		"return 1\n//# sourceMappingURL=file://" + fifo,
	} {
		done := make(chan *Outcome, 1)
		go func() { out, _ := sb.Run(context.Background(), code, RunOptions{}); done <- out }()
		select {
		case out := <-done:
			if out.IsError || string(out.Value) != "1" {
				t.Fatalf("Run(%q) = %+v", code, out)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Run(%q) blocked reading the source map file", code)
		}
	}
}

func TestConcurrentRunsLimit(t *testing.T) {
	gate := make(chan struct{})
	sb, fc := newTestSandbox(t, Limits{MaxConcurrent: 8, QueueWait: 20 * time.Millisecond},
		func(ctx context.Context, b, tool string, args json.RawMessage) (*toolcall.Result, error) {
			select {
			case <-gate:
				return toolcall.Text("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	var wg sync.WaitGroup
	outs := make([]*Outcome, 8)
	for i := range outs {
		wg.Go(func() {
			out, err := sb.Run(t.Context(), `return await exa.search({})`, RunOptions{})
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		})
	}
	for fc.active.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	if _, err := sb.Run(t.Context(), `return 1`, RunOptions{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("ninth run: err = %v, want ErrBusy", err)
	}
	close(gate)
	wg.Wait()
	for i, out := range outs {
		if out == nil || out.IsError || string(out.Value) != `"done"` {
			t.Fatalf("run %d = %+v", i, out)
		}
	}
	expectValue(t, sb, `return 1`, `1`)
}

// TestNoStateLeaks: globals, prototypes and module state set by one run
// are gone in the next.
func TestNoStateLeaks(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	expectValue(t, sb, `globalThis.leak = 1; var v = 2; Math.leak = 3; String.prototype.leak = 4; return 0`, `0`)
	expectValue(t, sb, `return [typeof leak, typeof v, typeof Math.leak, typeof "".leak]`, `["undefined","undefined","undefined","undefined"]`)
}
