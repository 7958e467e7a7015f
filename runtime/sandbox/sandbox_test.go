package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// fakeCaller answers tool calls from a function and records overlap.
type fakeCaller struct {
	fn        func(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error)
	mu        sync.Mutex
	calls     []string
	active    atomic.Int32
	maxActive atomic.Int32
	canceled  atomic.Int32
}

func (f *fakeCaller) CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, backend+"."+tool+" "+string(args))
	f.mu.Unlock()
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for {
		m := f.maxActive.Load()
		if n <= m || f.maxActive.CompareAndSwap(m, n) {
			break
		}
	}
	res, err := f.fn(ctx, backend, tool, args)
	if ctx.Err() != nil {
		f.canceled.Add(1)
	}
	return res, err
}

func (f *fakeCaller) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// echo returns its arguments as structuredContent, or what "reply" asks.
func echo(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	switch tool {
	case "text":
		return toolcall.Text("plain text"), nil
	case "jsontext":
		return toolcall.Text(`{"n": 1, "list": [1, 2]}`), nil
	case "fail":
		return toolcall.Errorf("quota exceeded for %s", backend), nil
	case "down":
		return nil, errors.New("connection refused")
	case "image":
		return &toolcall.Result{Content: []json.RawMessage{
			json.RawMessage(`{"type":"text","text":"caption"}`),
			json.RawMessage(`{"type":"image","data":"AAAA","mimeType":"image/png"}`),
		}}, nil
	case "empty":
		return &toolcall.Result{}, nil
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	case "sleep":
		select {
		case <-time.After(30 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &toolcall.Result{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"ignored"}`)},
		StructuredContent: append(json.RawMessage(`{"tool":"`+backend+"."+tool+`","args":`), append(args, '}')...)}, nil
}

var testBackends = []bridge.Backend{
	{Name: "exa", Tools: []manifest.Tool{
		{Name: "search", Description: "Search.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "text", InputSchema: json.RawMessage(`{}`)},
		{Name: "jsontext", InputSchema: json.RawMessage(`{}`)},
		{Name: "fail", InputSchema: json.RawMessage(`{}`)},
		{Name: "down", InputSchema: json.RawMessage(`{}`)},
		{Name: "image", InputSchema: json.RawMessage(`{}`)},
		{Name: "empty", InputSchema: json.RawMessage(`{}`)},
		{Name: "wait", InputSchema: json.RawMessage(`{}`)},
		{Name: "sleep", InputSchema: json.RawMessage(`{}`)},
	}},
	{Name: "my-backend", Tools: []manifest.Tool{
		{Name: "get-data", InputSchema: json.RawMessage(`{}`)},
		{Name: "delete", InputSchema: json.RawMessage(`{}`)},
	}},
	{Name: "github", Tools: []manifest.Tool{
		{Name: "create_issue", InputSchema: json.RawMessage(`{}`)},
		{Name: "search_repositories", InputSchema: json.RawMessage(`{}`)},
	}},
}

func newTestSandbox(t testing.TB, lim Limits, fn func(context.Context, string, string, json.RawMessage) (*toolcall.Result, error)) (*Sandbox, *fakeCaller) {
	t.Helper()
	if fn == nil {
		fn = echo
	}
	fc := &fakeCaller{fn: fn}
	sb, err := New(Options{
		Preamble: string(bridge.Preamble(testBackends)), Bindings: bridge.Lookup(testBackends).Bindings(),
		Caller:   fc,
		Limits:   lim,
		Backends: func() []string { return []string{"exa", "my-backend", "github", "slack"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb, fc
}

func runCode(t testing.TB, sb *Sandbox, code string) *Outcome {
	t.Helper()
	out, err := sb.Run(context.Background(), code, RunOptions{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// expectValue runs code and compares the returned JSON.
func expectValue(t *testing.T, sb *Sandbox, code, want string) *Outcome {
	t.Helper()
	out := runCode(t, sb, code)
	if out.IsError {
		t.Fatalf("Run(%q) failed: %s", code, out.Error)
	}
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if err := json.Unmarshal(out.Value, &g); err != nil {
		t.Fatalf("Run(%q) returned invalid JSON %q", code, out.Value)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Fatalf("Run(%q) value (-want +got):\n%s", code, d)
	}
	return out
}

// expectError runs code and checks the failure's cause and message.
func expectError(t *testing.T, sb *Sandbox, code string, cause error, contains ...string) *Outcome {
	t.Helper()
	out := runCode(t, sb, code)
	if !out.IsError {
		t.Fatalf("Run(%q) = %s, want an error", code, out.Value)
	}
	if !errors.Is(out.Cause, cause) {
		t.Fatalf("Run(%q) cause = %v, want %v; error:\n%s", code, out.Cause, cause, out.Error)
	}
	for _, s := range contains {
		if !strings.Contains(out.Error, s) {
			t.Fatalf("Run(%q) error does not mention %q:\n%s", code, s, out.Error)
		}
	}
	return out
}

func TestReturnValues(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct{ name, code, want string }{
		{"undefined is null", `1 + 1; return undefined`, `null`},
		{"number", `return 6 * 7`, `42`},
		{"object", `return {a: [1, "x", null], b: {c: true}}`, `{"a":[1,"x",null],"b":{"c":true}}`},
		{"structured content", `return await exa.search({q: "mcp"})`, `{"tool":"exa.search","args":{"q":"mcp"}}`},
		{"no args is empty object", `return await exa.search()`, `{"tool":"exa.search","args":{}}`},
		{"text block parsed as JSON", `const r = await exa.jsontext({}); return r.list.length + r.n`, `3`},
		{"plain text stays a string", `return await exa.text({})`, `"plain text"`},
		{"mixed blocks give the content array", `const c = await exa.image({}); return c.map(b => b.type)`, `["text","image"]`},
		{"empty content is null", `return await exa.empty({})`, `null`},
		{"original names", `return (await globalThis["my-backend"]["get-data"]({id: 1})).tool`, `"my-backend.get-data"`},
		{"sanitized names", `return (await my_backend.get_data({})).tool`, `"my-backend.get-data"`},
		{"reserved tool name", `return (await my_backend.delete_({})).tool`, `"my-backend.delete"`},
		{"functions become null", `return {f() {}, n: 1}`, `{"n":1}`},
		{"date", `return new Date(0)`, `"1970-01-01T00:00:00.000Z"`},
		{"promise chain", `return exa.search({n: 1}).then(r => r.args.n + 1)`, `2`},
		{"for await", `const out = []; for await (const r of [exa.search({i: 1}), exa.search({i: 2})]) out.push(r.args.i); return out`, `[1,2]`},
		{"try catch tool error", `try { await exa.fail({}); } catch (e) { return [e.message, e.tool, e instanceof Error] }`, `["quota exceeded for exa","exa.fail",true]`},
		{"fire and forget finishes", `exa.sleep({}); return 1`, `1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectValue(t, sb, tc.code, tc.want) })
	}
}

// TestLastExpressionIsReturned: without an explicit return, a body yields
// its last expression statement's value, as tier 2 does for one bare call.
func TestLastExpressionIsReturned(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct{ name, code, want string }{
		{"bare call after statements", "const q = `v1`;\nawait exa.search({message: q})", `{"tool":"exa.search","args":{"message":"v1"}}`},
		{"bare call with template literal", "const n = 1\nawait exa.search({message: `v${n}`})", `{"tool":"exa.search","args":{"message":"v1"}}`},
		{"TypeScript", "const q: string = 'ts';\nawait exa.search({q} as {q: string})", `{"tool":"exa.search","args":{"q":"ts"}}`},
		{"TypeScript generic call", "const m = new Map<string, number>([['a', 1]]);\nArray.from<number>(m.values())", `[1]`},
		{"one expression", `1 + 1;`, `2`},
		{"expression on the first line", `6 * 7; `, `42`},
		{"assignment", `let x; x = {a: 1}`, `{"a":1}`},
		{"console.log is undefined", `const a = 1; console.log(a)`, `null`},
		{"last statement not an expression", `const a = 1; const b = a + 1;`, `null`},
		{"explicit return wins", `if (true) return "early"; "late"`, `"early"`},
		{"fall through to the last expression", `if (false) return "early"; "late"`, `"late"`},
		{"last statement in a block is not returned", `{ 1 + 1 }`, `null`},
		{"function declaration last", `function f() { return 1 }`, `null`},
		{"promise is awaited", `const p = exa.search({n: 1}); p.then(r => r.args.n)`, `1`},
		{"module form unchanged", "export default async function main() { return 3 }\n", `3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectValue(t, sb, tc.code, tc.want) })
	}
}

// TestLastExpressionPositions: the inserted return does not move the
// positions reported for the statement it precedes.
func TestLastExpressionPositions(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	for _, tc := range []struct{ name, last, notLast, at string }{
		{"JavaScript", "const a = 1;\n  await exa.fail({})", "const a = 1;\n  await exa.fail({}); const z = 0", "input.ts:2:17"},
		{"JavaScript on line 1", "await exa.fail({})", "await exa.fail({}); const z = 0", "input.ts:1:15"},
		{"thrown in the last expression", "const a = 1;\n  (() => { throw new Error('x') })()", "const a = 1;\n  (() => { throw new Error('x') })(); const z = 0", "input.ts:2:18"},
		{"TypeScript", "const a: number = 1;\n  await exa.fail({} as object)", "const a: number = 1;\n  await exa.fail({} as object); const z = 0", "input.ts:2:18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expectError(t, sb, tc.notLast, ErrThrown, tc.at)
			got := expectError(t, sb, tc.last, ErrThrown, tc.at)
			if want.Error != got.Error {
				t.Errorf("error with the inserted return:\n%s\nwithout:\n%s", got.Error, want.Error)
			}
		})
	}
}

func TestTypeScript(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct{ name, code, want string }{
		{"annotations", `const n: number = 2; const f = (x: number): number => x * n; return f(21)`, `42`},
		{"interface and generics", "interface P { q: string }\nfunction id<T>(x: T): T { return x }\nconst p: P = {q: 'a'};\nreturn id<string>(p.q)", `"a"`},
		{"enum", `enum Color { Red, Green = "g" } return [Color.Red, Color.Green]`, `[0,"g"]`},
		{"as and non-null", `const x = ({a: 1} as any)!; return x.a as number`, `1`},
		{"class fields", `class C { private n = 1; static k = 2; get v() { return this.n + C.k } } return new C().v`, `3`},
		{"async generator", `async function* g() { yield 1; yield await Promise.resolve(2) } const o: number[] = []; for await (const x of g()) o.push(x); return o`, `[1,2]`},
		{"optional chaining", `const o: any = {a: {b: null}}; return [o.a?.b?.c, o.x ?? "d"]`, `[null,"d"]`},
		{"export default main", "export default async function main() {\n  const r = await exa.search({q: 1});\n  return r.args;\n}", `{"q":1}`},
		{"export main", "type R = {q: number}\nexport async function main(): Promise<R> {\n  return {q: 2};\n}", `{"q":2}`},
		{"destructuring and spread", `const {a, ...rest} = {a: 1, b: 2, c: 3}; return [a, rest, [...[1, 2], 3]]`, `[1,{"b":2,"c":3},[1,2,3]]`},
		{"generic call", `const m = new Map<string, number>([["a", 1]]); return Array.from<number>(m.values())`, `[1]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectValue(t, sb, tc.code, tc.want) })
	}
}

func TestPromiseAllOverlaps(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	sb, fc := newTestSandbox(t, Limits{}, func(ctx context.Context, b, tool string, args json.RawMessage) (*toolcall.Result, error) {
		// Each call waits until all three have started: the run finishes
		// only if the calls overlap.
		if started.Add(1) == 3 {
			close(release)
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return toolcall.Text(string(args)), nil
	})
	out := expectValue(t, sb, `return await Promise.all([exa.search({i: 1}), exa.search({i: 2}), exa.search({i: 3})])`,
		`[{"i":1},{"i":2},{"i":3}]`)
	if got := fc.maxActive.Load(); got != 3 {
		t.Fatalf("max concurrent backend calls = %d, want 3", got)
	}
	if out.Calls != 3 {
		t.Fatalf("Calls = %d, want 3", out.Calls)
	}
}

func TestConsoleCapture(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{MaxLogBytes: 200}, nil)
	out := expectValue(t, sb, `console.log("a", 1, {b: [2]}, null, undefined); console.info("i"); console.warn("w"); console.error(new TypeError("e")); console.debug(() => 1); return 0`, `0`)
	want := []string{`a 1 {"b":[2]} null undefined`, "i", "[warn] w", "[error] TypeError: e\n\tat input.ts:1:140(53)", "[debug] [Function anonymous]"}
	if d := cmp.Diff(want[:3], out.Logs[:3]); d != "" {
		t.Fatalf("logs (-want +got):\n%s", d)
	}
	if !strings.HasPrefix(out.Logs[3], "[error] TypeError: e") || out.Logs[4] != want[4] {
		t.Fatalf("logs = %q", out.Logs)
	}
	out = expectValue(t, sb, `for (let i = 0; i < 100; i++) console.log("line " + i); return 1`, `1`)
	total := 0
	for _, l := range out.Logs {
		total += len(l)
	}
	last := out.Logs[len(out.Logs)-1]
	if total > 200+len(last)+2 || !strings.Contains(last, "truncated") {
		t.Fatalf("logs not bounded: %d bytes, last %q", total, last)
	}
	// Logs of a failing run come back too.
	out = expectError(t, sb, `console.log("before"); throw new Error("boom")`, ErrThrown, "Uncaught Error: boom")
	if d := cmp.Diff([]string{"before"}, out.Logs); d != "" {
		t.Fatalf("logs (-want +got):\n%s", d)
	}
}

func TestErrors(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct {
		name, code string
		cause      error
		contains   []string
	}{
		{"throw", "const x = 1;\nthrow new RangeError(\"bad \" + x)", ErrThrown, []string{"Uncaught RangeError: bad 1", "input.ts:2:7"}},
		{"throw in TypeScript", "const x: number = 1;\n\nthrow new Error(`t${x}`)", ErrThrown, []string{"Uncaught Error: t1", "input.ts:3:7"}},
		{"throw on line 1", `throw new Error("one")`, ErrThrown, []string{"input.ts:1:7"}},
		{"throw string", `throw "plain"`, ErrThrown, []string{"Uncaught plain"}},
		{"uncaught tool error", "const a = 1;\nawait exa.fail({})", ErrThrown, []string{"Uncaught Error: quota exceeded for exa", "input.ts:2:"}},
		{"unhandled rejection", `exa.fail({}); return "ok"`, ErrThrown, []string{"quota exceeded"}},
		{"rejection after return", `const p = exa.fail({}); await exa.sleep({}); return 1`, ErrThrown, []string{"quota exceeded"}},
		{"stalled", `await new Promise(() => {}); return 1`, ErrStalled, []string{"never settle"}},
		{"not serializable", `const o: any = {}; o.o = o; return o`, ErrResult, []string{"cannot be sent back as JSON"}},
		{"arguments must be an object", `return await exa.search("q")`, ErrThrown, []string{"takes one object of named arguments"}},
		{"module without main", `export const x = 1;`, ErrThrown, []string{"exports no function main"}},
		{"empty code", "  \n", ErrSyntax, []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectError(t, sb, tc.code, tc.cause, tc.contains...) })
	}
}

func TestSyntaxErrorPositions(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct{ name, code, want string }{
		{"line 1 column", `const x = ;`, "(line 1, column 11)\n1 | const x = ;\n              ^"},
		{"later line", "const a = 1;\nconst b = a +;\n", "(line 2, column 14)"},
		{"typescript line", "let n: number = 1;\nfunction f(x: number {\n}", "(line 2, column 22)"},
		{"module form", "export default async function main() {\n  return 1 +;\n}", "(line 2, column 13)"},
		{"unicode before error", `const s = "héllo"; const = 1`, "(line 1, column 26)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := expectError(t, sb, tc.code, ErrSyntax, "SyntaxError")
			if !strings.Contains(out.Error, tc.want) {
				t.Fatalf("error does not contain %q:\n%s", tc.want, out.Error)
			}
		})
	}
}

func TestHints(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	tests := []struct{ name, code, hint string }{
		{"shadowing", "const github = await github.search_repositories({q: 'x'});\nreturn github", "github is a backend name"},
		{"misspelled backend", `return await githb.create_issue({})`, "did you mean github?"},
		{"backend unavailable", `return await exa.down({})`, `backend "exa" did not answer`},
		{"configured but not bridged", `return await slack.post({})`, `backend "slack" is configured but down right now`},
		{"meta-tool", `return await search_tools({query: "x"})`, "meta-tools"},
		{"bare tool name", `return await create_issue({title: "x"})`, "call it on its backend: github.create_issue"},
		{"missing tool", `return await github.create_issu({})`, "did you mean create_issue?"},
		{"host global", `const fs = require("fs")`, "the sandbox has no require"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := runCode(t, sb, tc.code)
			if !out.IsError || !strings.Contains(out.Error, "hint: ") || !strings.Contains(out.Error, tc.hint) {
				t.Fatalf("Run(%q) error lacks hint %q:\n%s", tc.code, tc.hint, out.Error)
			}
		})
	}
}

func TestDynamicPreamble(t *testing.T) {
	sb, fc := newTestSandbox(t, Limits{}, nil)
	extra := string(bridge.Preamble([]bridge.Backend{{Name: "manual", Tools: []manifest.Tool{{Name: "ping", InputSchema: json.RawMessage(`{}`)}}}}))
	out, err := sb.Run(t.Context(), `return (await manual.ping({x: 1})).tool`, RunOptions{ExtraPreamble: extra})
	if err != nil || out.IsError {
		t.Fatalf("Run: %v %+v", err, out)
	}
	if string(out.Value) != `"manual.ping"` {
		t.Fatalf("value = %s", out.Value)
	}
	if got := fc.log(); len(got) != 1 || got[0] != `manual.ping {"x":1}` {
		t.Fatalf("calls = %q", got)
	}
	// Without the extra preamble the backend is unknown again.
	expectError(t, sb, `return await manual.ping({})`, ErrThrown, "manual is not defined")
}

func TestRunOptionsTimeoutCapped(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{Timeout: time.Second, MaxTimeout: 2 * time.Second}, nil)
	start := time.Now()
	out, err := sb.Run(t.Context(), `await exa.wait({})`, RunOptions{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out.Cause, ErrTimeout) || !strings.Contains(out.Error, "2s") {
		t.Fatalf("outcome = %+v", out)
	}
	if time.Since(start) > time.Minute {
		t.Fatal("the requested timeout was not capped")
	}
}

func TestCancelReachesCaller(t *testing.T) {
	sb, fc := newTestSandbox(t, Limits{}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *Outcome)
	go func() {
		out, _ := sb.Run(ctx, `await Promise.all([exa.wait({}), exa.wait({})])`, RunOptions{})
		done <- out
	}()
	for fc.active.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	out := <-done
	if !errors.Is(out.Cause, ErrCanceled) {
		t.Fatalf("cause = %v", out.Cause)
	}
	for fc.active.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	if got := fc.canceled.Load(); got != 2 {
		t.Fatalf("canceled backend calls = %d, want 2", got)
	}
}

func ExampleSandbox_Run() {
	sb, _ := New(Options{
		Preamble: string(bridge.Preamble([]bridge.Backend{{Name: "exa", Tools: []manifest.Tool{{Name: "search", InputSchema: json.RawMessage(`{}`)}}}})), Bindings: bridge.Lookup([]bridge.Backend{{Name: "exa", Tools: []manifest.Tool{{Name: "search", InputSchema: json.RawMessage(`{}`)}}}}).Bindings(),
		Caller: callerFunc(func(_ context.Context, b, tool string, args json.RawMessage) (*toolcall.Result, error) {
			return toolcall.Text(`{"hits": 3}`), nil
		}),
	})
	out, _ := sb.Run(context.Background(), `const r: {hits: number} = await exa.search({q: "mcp"}); return r.hits * 2`, RunOptions{})
	fmt.Println(string(out.Value), out.Calls, out.IsError)
	// Output: 6 1 false
}

type callerFunc func(context.Context, string, string, json.RawMessage) (*toolcall.Result, error)

func (f callerFunc) CallTool(ctx context.Context, b, t string, a json.RawMessage) (*toolcall.Result, error) {
	return f(ctx, b, t, a)
}

func TestTimeoutCancelsCalls(t *testing.T) {
	sb, fc := newTestSandbox(t, Limits{}, nil)
	out, err := sb.Run(t.Context(), `await Promise.all([exa.wait({}), exa.wait({}), exa.search({})])`, RunOptions{Timeout: 100 * time.Millisecond})
	if err != nil || !errors.Is(out.Cause, ErrTimeout) || !strings.Contains(out.Error, "waiting for 2 tool calls") {
		t.Fatalf("Run: %v %+v", err, out)
	}
	for fc.active.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	if got := fc.canceled.Load(); got != 2 {
		t.Fatalf("canceled backend calls = %d, want 2", got)
	}
}

func TestLimitsConfigurable(t *testing.T) {
	sb, fc := newTestSandbox(t, Limits{MaxCalls: 3, MaxCallStack: 100, MaxCodeBytes: 200, MaxNesting: 30, MaxString: 1000, MaxArray: 50}, nil)
	expectValue(t, sb, `for (let i = 0; i < 3; i++) await exa.search({i}); return 1`, `1`)
	before := len(fc.log())
	expectError(t, sb, `for (let i = 0; i < 4; i++) await exa.search({i})`, ErrThrown, "already made 3 tool calls")
	if got := len(fc.log()) - before; got != 3 {
		t.Fatalf("%d calls reached the backend, want 3", got)
	}
	// A script that catches the refusal goes on; the outcome still says
	// how many calls the cap turned away (metrics count it as a limit hit).
	out := runCode(t, sb, `let n = 0; for (let i = 0; i < 5; i++) { try { await exa.search({i}) } catch (e) { n++ } } return n`)
	if out.IsError || string(out.Value) != "2" || out.Calls != 3 || out.Refused != 2 {
		t.Fatalf("caught refusals: value %s, calls %d, refused %d (error %q); want 2, 3, 2", out.Value, out.Calls, out.Refused, out.Error)
	}
	expectValue(t, sb, `function f(n) { return n ? f(n - 1) : 0 } return f(50)`, `0`)
	expectError(t, sb, `function f(n) { return n ? f(n - 1) : 0 } return f(500)`, ErrThrown, "more than 100 nested calls")
	expectError(t, sb, `return 1;`+strings.Repeat(" ", 300), ErrSyntax, "the limit is 200")
	expectError(t, sb, `return `+strings.Repeat("(", 20)+"1"+strings.Repeat(")", 20), ErrSyntax, "more than 30 levels")
	expectValue(t, sb, `return "ab".repeat(500).length`, `1000`)
	expectError(t, sb, `return "ab".repeat(501)`, ErrThrown, "limit of 1000 characters")
	expectError(t, sb, `return Array(51).fill(0)`, ErrThrown, "limit of 50 elements")
}

// BenchmarkPromiseAllOverlap: three backend calls of 100 ms under
// Promise.all take about 100 ms of wall time, not 300.
func BenchmarkPromiseAllOverlap(b *testing.B) {
	sb, _ := newTestSandbox(b, Limits{}, func(ctx context.Context, _, _ string, _ json.RawMessage) (*toolcall.Result, error) {
		select {
		case <-time.After(100 * time.Millisecond):
			return toolcall.Text("{}"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	for b.Loop() {
		out := runCode(b, sb, `return await Promise.all([exa.search({}), exa.search({}), exa.search({})])`)
		if out.IsError {
			b.Fatal(out.Error)
		}
	}
}

func TestHintListsEachBackendOnce(t *testing.T) {
	sb, _ := newTestSandbox(t, Limits{}, nil)
	// A full extra preamble rebinds every compiled backend, as the catalog
	// sends once any backend drifted or registered at run time.
	extra := string(bridge.Preamble(testBackends))
	out, err := sb.Run(t.Context(), `return await zzqqxx.call({})`, RunOptions{ExtraPreamble: extra, ExtraBindings: bridge.Lookup(testBackends).Bindings()})
	if err != nil || !out.IsError {
		t.Fatalf("Run: %v %+v", err, out)
	}
	_, list, ok := strings.Cut(out.Error, "backends are available as globals: ")
	if !ok {
		t.Fatalf("no backend list in the hint:\n%s", out.Error)
	}
	list, _, _ = strings.Cut(list, ";")
	seen := map[string]bool{}
	for _, b := range strings.Split(list, ", ") {
		if seen[b] {
			t.Errorf("backend %s listed twice: %s", b, list)
		}
		seen[b] = true
	}
}
