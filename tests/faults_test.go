//go:build e2e

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

var (
	faultOnce sync.Once
	faultPath string
	faultErr  error
)

// faultBin builds tests/faultserver, the misbehaving backend, once, or
// takes it from $KILN_FIXTURES (what make e2e passes: make builds it once
// per run).
func faultBin(t *testing.T) string {
	t.Helper()
	faultOnce.Do(func() {
		if dir := os.Getenv("KILN_FIXTURES"); dir != "" {
			faultPath = filepath.Join(dir, "faultserver")
			return
		}
		dir, err := os.MkdirTemp("", "kiln-faultserver")
		if err != nil {
			faultErr = err
			return
		}
		faultPath = filepath.Join(dir, "faultserver")
		cmd := exec.Command("go", "build", "-o", faultPath, "./tests/faultserver")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			faultErr = fmt.Errorf("go build faultserver: %v\n%s", err, out)
		}
	})
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	return faultPath
}

// faultKiln is kiln serving over stdio to an mcp-go client that records
// the notifications it receives.
type faultKiln struct {
	t      *testing.T
	c      *mcpclient.Client
	config string // the kiln.yaml kiln serves, for edits
	mu     sync.Mutex
	notes  []mcpgo.JSONRPCNotification
	stderr strings.Builder // what kiln logged, guarded by mu
}

func (k *faultKiln) Write(p []byte) (int, error) {
	k.mu.Lock()
	k.stderr.Write(p)
	k.mu.Unlock()
	return testWriter{k.t, "kiln"}.Write(p)
}

func (k *faultKiln) logged(s string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Contains(k.stderr.String(), s)
}

// startFaultKiln runs kiln with a config that allows the fault server as a
// stdio registration, fast health checks and a short connect timeout, plus
// extra backends lines.
func startFaultKiln(t *testing.T, backends string) *faultKiln {
	t.Helper()
	return startFaultKilnWith(t, fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 5s
  health:
    interval: 1s
    timeout: 500ms
    failures: 2
  registration:
    allow_commands: [%s]
    allow_hosts: [127.0.0.1]   # the HTTP fault server listens on loopback
    max_backends: 4
backends:
%s`, t.TempDir(), faultBin(t), backends))
}

// startFaultKilnWith runs kiln on the given config text.
func startFaultKilnWith(t *testing.T, cfg string) *faultKiln {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &faultKiln{t: t, config: path}
	tr := transport.NewStdioWithOptions(kilnBin(t), nil, []string{"serve", "--config", path},
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Dir = repoRoot(t)
			cmd.Stderr = k
			return cmd, nil
		}))
	k.c = mcpclient.NewClient(tr)
	k.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.notes = append(k.notes, n)
	})
	startMCPGo(t, k.c)
	return k
}

// call runs a meta-tool; meta, when set, goes into the request's _meta.
func (k *faultKiln) call(ctx context.Context, tool string, args map[string]any, progressToken any) result {
	k.t.Helper()
	req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: tool, Arguments: args}}
	if progressToken != nil {
		req.Params.Meta = &mcpgo.Meta{ProgressToken: progressToken}
	}
	res, err := k.c.CallTool(ctx, req)
	if err != nil {
		k.t.Fatalf("%s: %v", tool, err)
	}
	r, err := toResult(res.Content, res.StructuredContent, res.IsError)
	if err != nil {
		k.t.Fatal(err)
	}
	return r
}

func (k *faultKiln) chain(ctx context.Context, code string) result {
	return k.call(ctx, "call_tool_chain", map[string]any{"code": code}, nil)
}

// register adds a fault server backend at run time and returns its state
// folder.
func (k *faultKiln) register(name string, env map[string]string, extra map[string]any) (string, result) {
	k.t.Helper()
	dir := k.t.TempDir()
	e := map[string]any{"FAULT_STATE_DIR": dir}
	for key, v := range env {
		e[key] = v
	}
	tpl := map[string]any{"name": name, "transport": "stdio", "command": faultBin(k.t), "env": e}
	for key, v := range extra {
		tpl[key] = v
	}
	return dir, k.call(k.t.Context(), "register_manual", map[string]any{"manual_call_template": tpl}, nil)
}

func (k *faultKiln) resource(uri string) string {
	k.t.Helper()
	res, err := k.c.ReadResource(k.t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
	if err != nil {
		k.t.Fatalf("read %s: %v", uri, err)
	}
	var parts []string
	for _, c := range res.Contents {
		if tc, ok := c.(mcpgo.TextResourceContents); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// eventually polls check until it holds, for two minutes at most: a check
// that never holds fails its test, not the whole suite at its timeout.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for !check() {
		select {
		case <-t.Context().Done():
			t.Fatalf("never: %s", what)
		case <-deadline:
			t.Fatalf("not within 2 minutes: %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func events(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "events.log"))
	return string(b)
}

func pidIn(t *testing.T, dir string) int {
	t.Helper()
	var pid int
	eventually(t, "the backend wrote its pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// The fault tests drive every fault of the fault server through kiln serve
// with a real client. Each starts its own gateway with the fault backend f1
// registered (startFaultCase), so none depends on another's order or state;
// each says what the client must see.

// declaredBackend is a config backend that never runs: a name of kiln's
// own config for the registration tests.
const declaredBackend = "  declared:\n    command: \"true\"\n    enabled: false\n"

// startFaultCase starts kiln with extra config backends and registers f1,
// returning the gateway and f1's state folder (its events.log and pid).
func startFaultCase(t *testing.T, backends string) (*faultKiln, string) {
	t.Helper()
	k := startFaultKiln(t, backends)
	dir, r := k.register("f1", nil, nil)
	if r.IsError || !strings.Contains(r.Text(), `"registered": "f1"`) || !strings.Contains(r.Text(), "f1.hang") {
		t.Fatalf("register f1: %s", r.Text())
	}
	return k, dir
}

// TestFaultRegisteredToolsInEveryTier: registered tools are searchable and callable in every tier.
func TestFaultRegisteredToolsInEveryTier(t *testing.T) {
	k, _ := startFaultCase(t, "")
	r := k.call(t.Context(), "search_tools", map[string]any{"task_description": "return its text argument unchanged echo"}, nil)
	if !strings.Contains(r.Text(), "f1.echo") {
		t.Errorf("search_tools does not find f1.echo: %s", r.Text())
	}
	for _, code := range []string{`{"tool":"f1.echo","arguments":{"text":"tier1"}}`, `await f1.echo({text: "tier2"})`,
		`const a = await f1.echo({text: "tier"}); return a + "3";`} {
		r := k.chain(t.Context(), code)
		if r.IsError || !strings.Contains(r.Text(), "tier") {
			t.Errorf("%s: %s", code, r.Text())
		}
	}
}

// TestFaultUncompiledBackendServedLive: a configured backend that is not compiled in is served live.
func TestFaultUncompiledBackendServedLive(t *testing.T) {
	k, _ := startFaultCase(t, "  uncompiled:\n    command: "+faultBin(t)+"\n")
	eventually(t, "uncompiled.echo answers", func() bool {
		r := k.chain(t.Context(), `await uncompiled.echo({text: "live tools"})`)
		return !r.IsError && strings.Contains(r.Text(), "live tools")
	})
	if r := k.call(t.Context(), "search_tools", map[string]any{"task_description": "hang until canceled", "limit": 20}, nil); !strings.Contains(r.Text(), "uncompiled.hang") {
		t.Errorf("search does not find the live tools: %s", r.Text())
	}
	// Neither has a review to pin to (drift: pin is the default), and
	// kiln://backends says so.
	var backends []struct {
		Name      string `json:"name"`
		Review    string `json:"review"`
		DriftMode string `json:"drift_mode"`
	}
	if err := json.Unmarshal([]byte(k.resource("kiln://backends")), &backends); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"uncompiled": "none (not compiled in)", "f1": "none (registered at run time)"}
	for _, b := range backends {
		if w, ok := want[b.Name]; ok {
			if b.Review != w || b.DriftMode != "follow" {
				t.Errorf("kiln://backends %s: review %q, drift_mode %q; want %q, follow", b.Name, b.Review, b.DriftMode, w)
			}
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("kiln://backends lacks %v", want)
	}
}

// TestFaultProgressUnderClientToken: progress reaches the client under its own token, and the
// backend's log message at the level the client asked for.
func TestFaultProgressUnderClientToken(t *testing.T) {
	k, dir := startFaultCase(t, "")
	// A 2026-07-28 client gets log messages only at the level it names.
	//lint:ignore SA1019 on 2026-07-28 mcp-go sends the level in each request's _meta
	if err := k.c.SetLevel(t.Context(), mcpgo.SetLevelRequest{Params: mcpgo.SetLevelParams{Level: mcpgo.LoggingLevelInfo}}); err != nil {
		t.Fatal(err)
	}
	r := k.call(t.Context(), "call_tool_chain", map[string]any{"code": `{"tool":"f1.progress","arguments":{"steps":3,"ms":100}}`}, "client-token-7")
	if r.IsError {
		t.Fatal(r.Text())
	}
	eventually(t, "three progress notifications with the client's token", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		n := 0
		for _, note := range k.notes {
			if note.Method == "notifications/progress" && fmt.Sprint(note.Params.AdditionalFields["progressToken"]) == "client-token-7" {
				n++
			}
		}
		return n == 3
	})
	eventually(t, "the backend's log message reached the client", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, note := range k.notes {
			if note.Method == "notifications/message" && fmt.Sprint(note.Params.AdditionalFields["data"]) == "progress tool ran" {
				return true
			}
		}
		return false
	})
	if !strings.Contains(events(dir), "progress-token kiln-") {
		t.Errorf("the backend saw the client's token instead of kiln's: %s", events(dir))
	}
}

// TestFaultProgressFromTypeScript: progress reaches the client from inside a TypeScript run.
func TestFaultProgressFromTypeScript(t *testing.T) {
	k, _ := startFaultCase(t, "")
	r := k.call(t.Context(), "call_tool_chain", map[string]any{"code": `await f1.progress({steps: 2, ms: 100}); return "ran";`}, "ts-token")
	if r.IsError {
		t.Fatal(r.Text())
	}
	eventually(t, "two progress notifications with the TypeScript call's token", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		n := 0
		for _, note := range k.notes {
			if note.Method == "notifications/progress" && fmt.Sprint(note.Params.AdditionalFields["progressToken"]) == "ts-token" {
				n++
			}
		}
		return n == 2
	})
}

// TestFaultClientCancelReachesBackend: client cancel reaches the backend.
func TestFaultClientCancelReachesBackend(t *testing.T) {
	k, dir := startFaultCase(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = k.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain",
			Arguments: map[string]any{"code": `{"tool":"f1.hang"}`}}})
	}()
	eventually(t, "the hang call reached the backend", func() bool { return strings.Contains(events(dir), "running hang") })
	cancel()
	<-done
	eventually(t, "the backend's hang handler was canceled", func() bool { return strings.Contains(events(dir), "cancelled hang") })
}

// TestFaultSandboxTimeoutReachesBackend: sandbox timeout reaches the backend.
func TestFaultSandboxTimeoutReachesBackend(t *testing.T) {
	k, dir := startFaultCase(t, "")
	before := strings.Count(events(dir), "cancelled hang")
	start := time.Now()
	r := k.call(t.Context(), "call_tool_chain", map[string]any{"code": `await f1.hang({}); return "never";`, "timeout": 700}, nil)
	if !r.IsError || strings.Contains(r.Text(), "never") {
		t.Fatalf("hang under a 700ms run timeout: %s", r.Text())
	}
	if !strings.Contains(r.Text(), "700ms") {
		t.Errorf("a run timeout reported as something else: %s", r.Text())
	}
	t.Logf("client saw after %s: %s", time.Since(start).Round(time.Millisecond), firstLine(r.Text()))
	eventually(t, "a second canceled hang", func() bool { return strings.Count(events(dir), "cancelled hang") > before })
}

// TestFaultHugeOutputCapped: huge output is capped and kiln keeps serving.
func TestFaultHugeOutputCapped(t *testing.T) {
	k, _ := startFaultCase(t, "")
	r := k.chain(t.Context(), `{"tool":"f1.huge","arguments":{"bytes":5000000}}`)
	if len(r.Text()) > 210000 {
		t.Errorf("5 MB output came back as %d bytes", len(r.Text()))
	}
	if r := k.chain(t.Context(), `await f1.echo({text: "still here"})`); !strings.Contains(r.Text(), "still here") {
		t.Errorf("after a huge output: %s", r.Text())
	}
}

// TestFaultKillMidCall: kill -9 mid-call fails fast and the backend restarts.
func TestFaultKillMidCall(t *testing.T) {
	k, dir := startFaultCase(t, "")
	pid := pidIn(t, dir)
	type out struct {
		r   result
		err error
	}
	got := make(chan out, 1)
	go func() {
		res, err := k.c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain",
			Arguments: map[string]any{"code": `{"tool":"f1.hang"}`}}})
		if err != nil {
			got <- out{err: err}
			return
		}
		r, err := toResult(res.Content, res.StructuredContent, res.IsError)
		got <- out{r, err}
	}()
	eventually(t, "the hang call reached the backend", func() bool { return strings.Contains(events(dir), "running hang") })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	o := <-got
	if o.err != nil || !o.r.IsError || !strings.Contains(o.r.Text(), `backend "f1" stopped while running it`) {
		t.Fatalf("call whose backend was killed: err=%v %s", o.err, o.r.Text())
	}
	t.Logf("client saw: %s", firstLine(o.r.Text()))
	eventually(t, "f1 answers again after its restart", func() bool {
		r := k.chain(t.Context(), `await f1.echo({text: "back"})`)
		return !r.IsError && strings.Contains(r.Text(), "back")
	})
	if st := k.resource("kiln://backend/f1"); !strings.Contains(st, `"healthy"`) {
		t.Errorf("kiln://backend/f1 after the restart: %s", st)
	}
}

// TestFaultHungBackendTimeout: hung backend behind a 1s timeout.
func TestFaultHungBackendTimeout(t *testing.T) {
	k, _ := startFaultCase(t, "")
	dir2, r := k.register("f2", nil, map[string]any{"timeout": "1s"})
	if r.IsError {
		t.Fatal(r.Text())
	}
	r = k.chain(t.Context(), `{"tool":"f2.hang"}`)
	if !r.IsError || !strings.Contains(r.Text(), "did not answer within 1s") {
		t.Fatalf("hang behind 1s: %s", r.Text())
	}
	t.Logf("client saw: %s", firstLine(r.Text()))
	eventually(t, "the timeout canceled the backend's handler", func() bool { return strings.Contains(events(dir2), "cancelled hang") })
}

// TestFaultStoppedBackendOpensCircuit: a stopped (SIGSTOP) backend opens the circuit, then recovers.
func TestFaultStoppedBackendOpensCircuit(t *testing.T) {
	t.Parallel()
	k, dir := startFaultCase(t, "")
	pid := pidIn(t, dir)
	syscall.Kill(pid, syscall.SIGSTOP)
	defer syscall.Kill(pid, syscall.SIGCONT)
	// Calls made before the circuit opens wait for their timeout;
	// once kiln has seen the failed probes they fail at once.
	eventually(t, "kiln marks f1 unhealthy", func() bool {
		return strings.Contains(k.resource("kiln://backend/f1"), `"unhealthy"`)
	})
	r := k.chain(t.Context(), `{"tool":"f1.echo","arguments":{"text":"x"}}`)
	if !r.IsError || !strings.Contains(r.Text(), "is unhealthy since") || !strings.Contains(r.Text(), "kiln retries at") {
		t.Fatalf("call with the circuit open: %s", r.Text())
	}
	t.Logf("client saw: %s", firstLine(r.Text()))
	syscall.Kill(pid, syscall.SIGCONT)
	eventually(t, "f1 healthy again after SIGCONT", func() bool {
		return strings.Contains(k.resource("kiln://backend/f1"), `"healthy"`)
	})
}

// TestFaultConcurrencyLimit: per-backend concurrency limit with a bounded wait.
func TestFaultConcurrencyLimit(t *testing.T) {
	k, _ := startFaultCase(t, "")
	_, r := k.register("fb", nil, map[string]any{"max_concurrent": 1, "queue_wait": "200ms"})
	if r.IsError {
		t.Fatal(r.Text())
	}
	r = k.chain(t.Context(), `
		const runs = await Promise.allSettled([fb.slow({ms: 1500}), fb.slow({ms: 1500})]);
		return runs.map(x => x.status === "fulfilled" ? "ok" : String(x.reason));`)
	if !strings.Contains(r.Text(), "ok") || !strings.Contains(r.Text(), `backend \"fb\" is busy`) || !strings.Contains(r.Text(), "max_concurrent") {
		t.Errorf("two calls on a backend allowing one: %s", r.Text())
	}
	t.Logf("client saw: %s", r.Text())
	if r := k.call(t.Context(), "deregister_manual", map[string]any{"manual_name": "fb"}, nil); r.IsError {
		t.Fatal(r.Text())
	}
}

// TestFaultStdoutGarbage: garbage on stdout is skipped.
func TestFaultStdoutGarbage(t *testing.T) {
	k, _ := startFaultCase(t, "")
	_, r := k.register("f3", map[string]string{"FAULT_STDOUT_GARBAGE": "1"}, nil)
	if r.IsError {
		t.Fatal(r.Text())
	}
	if r := k.chain(t.Context(), `await f3.echo({text: "clean"})`); r.IsError || !strings.Contains(r.Text(), "clean") {
		t.Errorf("echo through garbage: %s", r.Text())
	}
}

// TestFaultListChanged: list_changed refreshes search and the bridge.
func TestFaultListChanged(t *testing.T) {
	k, _ := startFaultCase(t, "")
	if r := k.chain(t.Context(), `{"tool":"f1.add_tool","arguments":{"name":"fresh_tool"}}`); r.IsError {
		t.Fatal(r.Text())
	}
	eventually(t, "search_tools finds the new tool", func() bool {
		r := k.call(t.Context(), "search_tools", map[string]any{"task_description": "fresh_tool"}, nil)
		return strings.Contains(r.Text(), "f1.fresh_tool")
	})
	if r := k.chain(t.Context(), `return "got " + (await f1.fresh_tool({text: "new"}))`); r.IsError || !strings.Contains(r.Text(), "got new") {
		t.Errorf("calling the new tool from TypeScript: %s", r.Text())
	}
}

// TestFaultRegistrationNeverStarts: a backend that never starts is refused with its reason.
func TestFaultRegistrationNeverStarts(t *testing.T) {
	k, _ := startFaultCase(t, "")
	dir4, r := k.register("f4", map[string]string{"FAULT_START_DELAY": "1h"}, nil)
	if !r.IsError || !strings.Contains(r.Text(), `backend "f4" did not start`) {
		t.Fatalf("never-starting registration: %s", r.Text())
	}
	t.Logf("client saw: %s", firstLine(r.Text()))
	pid := pidIn(t, dir4)
	eventually(t, "the never-started process is stopped", func() bool {
		return syscall.Kill(pid, 0) != nil || zombie(pid)
	})
	if strings.Contains(k.resource("kiln://backends"), `"f4"`) {
		t.Error("a refused registration is still listed")
	}
}

// TestFaultRegistrationPolicy: registration policy.
func TestFaultRegistrationPolicy(t *testing.T) {
	k, _ := startFaultCase(t, declaredBackend)
	tests := []struct {
		name string
		tpl  map[string]any
		want string
	}{
		{"stdio command not allowed", map[string]any{"name": "sh1", "command": "sh", "args": []string{"-c", "true"}}, "not in gateway.registration.allow_commands"},
		{"configured name", map[string]any{"name": "declared", "transport": "http", "url": "http://127.0.0.1:1/mcp"}, "pick another name"},
		{"meta-tool name", map[string]any{"name": "search_tools", "transport": "http", "url": "http://127.0.0.1:1/mcp"}, "reserved name"},
		{"environment reference", map[string]any{"name": "leak", "transport": "http", "url": "http://127.0.0.1:1/mcp", "headers": map[string]any{"X": "${HOME}"}}, "not expanded"},
		{"over max_backends", map[string]any{"name": "fifth", "transport": "http", "url": "http://127.0.0.1:1/mcp"}, "max_backends"},
	}
	for _, tc := range tests[:len(tests)-1] {
		r := k.call(t.Context(), "register_manual", map[string]any{"manual_call_template": tc.tpl}, nil)
		if !r.IsError || !strings.Contains(r.Text(), tc.want) {
			t.Errorf("%s: %s", tc.name, r.Text())
		}
	}
	// f1 and these three fill max_backends 4.
	for _, name := range []string{"f2", "f3", "f5"} {
		if _, r := k.register(name, nil, nil); r.IsError {
			t.Fatal(r.Text())
		}
	}
	last := tests[len(tests)-1]
	if r := k.call(t.Context(), "register_manual", map[string]any{"manual_call_template": last.tpl}, nil); !r.IsError || !strings.Contains(r.Text(), last.want) {
		t.Errorf("%s: %s", last.name, r.Text())
	}
}

// TestFaultDeregister: deregister removes tools from calls, search and the bridge.
func TestFaultDeregister(t *testing.T) {
	k, _ := startFaultCase(t, declaredBackend)
	if _, r := k.register("f3", nil, nil); r.IsError {
		t.Fatal(r.Text())
	}
	if r := k.call(t.Context(), "deregister_manual", map[string]any{"manual_name": "f3"}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	if r := k.chain(t.Context(), `{"tool":"f3.echo","arguments":{"text":"x"}}`); !r.IsError {
		t.Errorf("f3.echo after deregister: %s", r.Text())
	}
	if r := k.call(t.Context(), "search_tools", map[string]any{"task_description": "echo text", "limit": 50}, nil); strings.Contains(r.Text(), "f3.") {
		t.Errorf("search still lists f3: %s", r.Text())
	}
	if r := k.call(t.Context(), "deregister_manual", map[string]any{"manual_name": "declared"}, nil); !r.IsError || !strings.Contains(r.Text(), "enabled: false") {
		t.Errorf("deregistering a configured backend: %s", r.Text())
	}
}

// TestFaultConfigBackendNeverStarts: a config backend that never starts is reported, others keep working.
func TestFaultConfigBackendNeverStarts(t *testing.T) {
	t.Parallel()
	k, _ := startFaultCase(t, "  slowpoke:\n    command: "+faultBin(t)+"\n    env: {FAULT_START_DELAY: 1h}\n")
	eventually(t, "slowpoke reported unhealthy", func() bool {
		return regexp.MustCompile(`(?s)"name": "slowpoke".*?"state": "unhealthy"`).MatchString(k.resource("kiln://backends"))
	})
	if r := k.chain(t.Context(), `await f1.echo({text: "fine"})`); r.IsError {
		t.Errorf("f1 while slowpoke hangs: %s", r.Text())
	}
}

// TestFaultRestartStorm: restart storm is capped by the window.
func TestFaultRestartStorm(t *testing.T) {
	t.Parallel()
	k, _ := startFaultCase(t, "  storm:\n    command: "+faultBin(t)+"\n    env: {FAULT_EXIT_AT_START: \"4\"}\n")
	var st string
	eventually(t, "storm given up", func() bool {
		st = k.resource("kiln://backend/storm")
		return strings.Contains(st, "stopped restarting")
	})
	if !strings.Contains(st, "exiting at start as asked") {
		t.Errorf("storm status lacks its stderr: %s", st)
	}
	t.Logf("kiln://backend/storm: %s", firstLine(st))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestFaultHTTPBackend registers a streamable HTTP fault server and shows a
// timeout aborts the backend's request.
func TestFaultHTTPBackend(t *testing.T) {
	dir := t.TempDir()
	// Stateful on purpose: go-sdk v1.8.0 then answers server/discover with
	// 2026-07-28 but refuses requests at that version; kiln must notice and
	// connect with the initialize handshake instead.
	u := startFaultHTTPServer(t, "--state-dir", dir)
	k := startFaultKiln(t, "")
	tpl, _ := json.Marshal(map[string]any{"name": "web", "transport": "http", "url": u, "timeout": "1s"})
	var m map[string]any
	json.Unmarshal(tpl, &m)
	if r := k.call(t.Context(), "register_manual", map[string]any{"manual_call_template": m}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	if r := k.chain(t.Context(), `await web.echo({text: "over http"})`); r.IsError || !strings.Contains(r.Text(), "over http") {
		t.Fatalf("echo over http: %s", r.Text())
	}
	r := k.chain(t.Context(), `{"tool":"web.hang"}`)
	if !r.IsError || !strings.Contains(r.Text(), "did not answer within 1s") {
		t.Fatalf("hang over http behind 1s: %s", r.Text())
	}
	eventually(t, "the aborted request canceled the handler", func() bool { return strings.Contains(events(dir), "cancelled hang") })
}

// startFaultHTTPServer runs the fault server on streamable HTTP on a
// loopback port with flags (default: stateful, a fresh state folder) and
// returns its URL. It dies with the test binary even when a timeout panic
// skips cleanup.
func startFaultHTTPServer(t *testing.T, flags ...string) string {
	t.Helper()
	if len(flags) == 0 {
		flags = []string{"--state-dir", t.TempDir()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, faultBin(t), append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = srv.Wait() })
	urls := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(20 * time.Second):
		t.Fatal("fault server did not listen")
	}
	return ""
}
