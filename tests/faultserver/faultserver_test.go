//lint:file-ignore SA1019 the fault server still serves protocol versions before 2026-07-28, whose logging the tests check

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the faultserver built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faultserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "faultserver")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build faultserver: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// variant is one way of reaching the server: a transport, the protocol
// version the client asks for ("" is the SDK's newest, 2026-07-28) and the
// one the session must end up with.
type variant struct {
	name, transport, protocol, negotiated string
}

var variants = []variant{
	{"stdio/2025-11-25", "stdio", "2025-11-25", "2025-11-25"},
	{"stdio/latest", "stdio", "", "2026-07-28"},
	{"http/2025-11-25", "http", "2025-11-25", "2025-11-25"},
	// The SDK's stateful HTTP handler does not serve 2026-07-28, so the
	// client falls back.
	{"http/latest", "http", "", "2025-11-25"},
	{"http-stateless/latest", "http-stateless", "", "2026-07-28"},
}

// syncBuffer collects a child's stderr while tests read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// notes records what the server sent the client outside responses.
type notes struct {
	mu          sync.Mutex
	progress    []mcp.ProgressNotificationParams
	logs        []mcp.LoggingMessageParams
	listChanged int
}

func (n *notes) snapshot() (progress []mcp.ProgressNotificationParams, logs []mcp.LoggingMessageParams, listChanged int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]mcp.ProgressNotificationParams(nil), n.progress...), append([]mcp.LoggingMessageParams(nil), n.logs...), n.listChanged
}

// backend is one running faultserver with a connected client.
type backend struct {
	http    bool
	cmd     *exec.Cmd
	stderr  *syncBuffer
	state   string
	notes   *notes
	session *mcp.ClientSession

	closeOnce sync.Once
	closeErr  error
	exited    chan struct{} // HTTP only: closed once the process has exited
	waitErr   error
}

// close ends the session and, for stdio, waits for the process, returning
// how it exited.
func (b *backend) close() error {
	b.closeOnce.Do(func() {
		b.closeErr = b.session.Close()
		if b.http {
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
			<-b.exited
			b.closeErr = b.waitErr
		}
	})
	return b.closeErr
}

func (b *backend) events(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.state, "events.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}

// waitFor polls cond for up to ten seconds: long enough for a loaded
// machine, short enough that a missing event fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var listening = regexp.MustCompile(`faultserver: listening on (http://\S+/mcp)`)

// start runs the faultserver for v with extra FAULT_* variables and
// connects a go-sdk client to it.
func start(t *testing.T, v variant, env ...string) *backend {
	t.Helper()
	b := &backend{http: strings.HasPrefix(v.transport, "http"), stderr: &syncBuffer{}, state: t.TempDir(), notes: &notes{}}
	b.cmd = exec.Command(binary)
	if b.http {
		b.cmd.Args = append(b.cmd.Args, "--http", "127.0.0.1:0")
	}
	if v.transport == "http-stateless" {
		b.cmd.Args = append(b.cmd.Args, "--stateless")
	}
	b.cmd.Env = append(append(os.Environ(), "FAULT_STATE_DIR="+b.state), env...)
	b.cmd.Stderr = b.stderr
	var transport mcp.Transport
	if b.http {
		if err := b.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		b.exited = make(chan struct{})
		go func() { b.waitErr = b.cmd.Wait(); close(b.exited) }()
		waitFor(t, "the listening line or an exit", func() bool {
			select {
			case <-b.exited:
				return true
			default:
				return listening.MatchString(b.stderr.String())
			}
		})
		m := listening.FindStringSubmatch(b.stderr.String())
		if m == nil {
			t.Fatalf("faultserver exited (%v) before listening:\n%s", b.waitErr, b.stderr)
		}
		url := m[1]
		transport = &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	} else {
		transport = &mcp.CommandTransport{Command: b.cmd, TerminateDuration: time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "faultserver-test", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			b.notes.mu.Lock()
			defer b.notes.mu.Unlock()
			b.notes.progress = append(b.notes.progress, *r.Params)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b.notes.mu.Lock()
			defer b.notes.mu.Unlock()
			b.notes.logs = append(b.notes.logs, *r.Params)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			b.notes.mu.Lock()
			defer b.notes.mu.Unlock()
			b.notes.listChanged++
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: v.protocol})
	if err != nil {
		if b.http {
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
		t.Fatalf("connect: %v\nstderr:\n%s", err, b.stderr)
	}
	b.session = session
	if got := session.InitializeResult().ProtocolVersion; got != v.negotiated {
		t.Errorf("negotiated protocol %s, want %s", got, v.negotiated)
	}
	t.Cleanup(func() { _ = b.close() })
	return b
}

// modern reports whether the session speaks the stateless 2026-07-28
// protocol.
func (b *backend) modern() bool {
	return b.session.InitializeResult().ProtocolVersion >= "2026-07-28"
}

func call(t *testing.T, b *backend, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := b.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v\nstderr:\n%s", name, err, b.stderr)
	}
	return res
}

// onlyText returns the text of a result that must be one text block.
func onlyText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("got content %T, want *mcp.TextContent", res.Content[0])
	}
	return tc.Text
}

func TestTools(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			for _, tc := range []struct {
				tool    string
				args    map[string]any
				want    string
				isError bool
			}{
				{"echo", map[string]any{"text": "hello, faults"}, "hello, faults", false},
				{"slow", map[string]any{"ms": 2}, "slept 2ms", false},
				{"fail", map[string]any{"message": "boom as asked"}, "boom as asked", true},
				{"slow", map[string]any{"ms": -1}, "ms must be between 0 and 600000, got -1", true},
				{"add_tool", map[string]any{"name": "echo"}, `tool "echo" already exists: pick another name or remove it first`, true},
				{"remove_tool", map[string]any{"name": "nope"}, `no tool named "nope" to remove`, true},
			} {
				res := call(t, b, tc.tool, tc.args)
				if got := onlyText(t, res); got != tc.want || res.IsError != tc.isError {
					t.Errorf("%s%v = %q (isError %v), want %q (isError %v)", tc.tool, tc.args, got, res.IsError, tc.want, tc.isError)
				}
			}
			before, _ := strconv.Atoi(onlyText(t, call(t, b, "calls", nil)))
			call(t, b, "echo", map[string]any{"text": "x"})
			after, _ := strconv.Atoi(onlyText(t, call(t, b, "calls", nil)))
			names := strings.Split(onlyText(t, call(t, b, "env", nil)), "\n")
			if !slices.Contains(names, "FAULT_STATE_DIR") || !slices.IsSorted(names) || strings.Contains(strings.Join(names, ""), "=") {
				t.Errorf("env lists %v; want sorted names only, FAULT_STATE_DIR among them", names)
			}
			if before != 7 || after != 9 {
				t.Errorf("calls went %d → %d around one echo; want 7 (six calls and itself) → 9", before, after)
			}
			if n := strings.Count(b.events(t), "\ncall echo id="); n != 2 {
				t.Errorf("events.log has %d echo calls after start, want 2:\n%s", n, b.events(t))
			}
		})
	}
}

var hugeLine = regexp.MustCompile(`^line (\d{8}) of a huge result: abcdefghijklmnopqrstuvwxyz0123456789$`)

func TestHuge(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			for _, size := range []int{0, 1, 100_003} {
				got := onlyText(t, call(t, b, "huge", map[string]any{"bytes": size}))
				if len(got) != size {
					t.Fatalf("huge %d: got %d bytes", size, len(got))
				}
				lines := strings.Split(got, "\n")
				for i, line := range lines[:len(lines)-1] { // the last line may be cut short
					m := hugeLine.FindStringSubmatch(line)
					if m == nil || m[1] != fmt.Sprintf("%08d", i+1) {
						t.Fatalf("huge %d: line %d is %q, want numbered line %d", size, i+1, line, i+1)
					}
				}
			}
		})
	}
}

func TestRich(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			res := call(t, b, "rich", nil)
			var kinds []string
			for _, c := range res.Content {
				switch c := c.(type) {
				case *mcp.TextContent:
					kinds = append(kinds, "text")
				case *mcp.ImageContent:
					kinds = append(kinds, "image")
					cfg, err := png.DecodeConfig(bytes.NewReader(c.Data))
					if err != nil || c.MIMEType != "image/png" || cfg.Width != 2 {
						t.Errorf("image: mime %q, decode %+v, %v; want a 2x2 image/png", c.MIMEType, cfg, err)
					}
				case *mcp.EmbeddedResource:
					kinds = append(kinds, "resource")
					if c.Resource.URI != "faultserver://rich/note.txt" || c.Resource.Text != "an embedded text resource" {
						t.Errorf("resource = %+v", c.Resource)
					}
				default:
					kinds = append(kinds, fmt.Sprintf("%T", c))
				}
			}
			if diff := cmp.Diff([]string{"text", "image", "resource"}, kinds); diff != "" {
				t.Errorf("content kinds (-want +got):\n%s", diff)
			}
			raw, err := json.Marshal(res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("structuredContent %s: %v", raw, err)
			}
			want := map[string]any{"summary": "rich result", "count": 3.0, "kinds": []any{"text", "image", "resource"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("structuredContent (-want +got):\n%s", diff)
			}
			tools, err := b.session.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range tools.Tools {
				if tool.Name != "rich" {
					continue
				}
				schema, _ := json.Marshal(tool.OutputSchema)
				for _, prop := range []string{"summary", "count", "kinds"} {
					if !strings.Contains(string(schema), `"`+prop+`"`) {
						t.Errorf("rich outputSchema %s lacks %q", schema, prop)
					}
				}
			}
		})
	}
}

func TestProgress(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3, "ms": 1}}
			params.SetProgressToken("tok-" + v.transport)
			if b.modern() {
				// 2026-07-28 dropped logging/setLevel; the level rides in _meta.
				params.Meta[mcp.MetaKeyLogLevel] = "info"
			} else if err := b.session.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			res, err := b.session.CallTool(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if got := onlyText(t, res); got != "done 3 steps" {
				t.Errorf("result %q, want %q", got, "done 3 steps")
			}
			waitFor(t, "3 progress notifications and 1 log message", func() bool {
				p, l, _ := b.notes.snapshot()
				return len(p) >= 3 && len(l) >= 1
			})
			progress, logs, _ := b.notes.snapshot()
			var want []mcp.ProgressNotificationParams
			for i := 1; i <= 3; i++ {
				want = append(want, mcp.ProgressNotificationParams{ProgressToken: "tok-" + v.transport, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
			}
			if diff := cmp.Diff(want, progress); diff != "" {
				t.Errorf("progress notifications (-want +got):\n%s", diff)
			}
			wantLogs := []mcp.LoggingMessageParams{{Level: "info", Logger: "faultserver", Data: "progress tool ran"}}
			if diff := cmp.Diff(wantLogs, logs); diff != "" {
				t.Errorf("log messages (-want +got):\n%s", diff)
			}
			if ev := b.events(t); !strings.Contains(ev, "progress-token tok-"+v.transport+"\n") {
				t.Errorf("events.log lacks the progress token:\n%s", ev)
			}
		})
	}
}

var hangCall = regexp.MustCompile(`call hang id=(\S+)`)

func TestCancel(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := b.session.CallTool(ctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
				errc <- err
			}()
			waitFor(t, "the hang handler to start", func() bool { return strings.Contains(b.events(t), "running hang\n") })
			id := hangCall.FindStringSubmatch(b.events(t))[1]
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("hang call returned %v, want context.Canceled", err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("events.log:\n%s", b.events(t))
				}
			}()
			waitFor(t, "the server to record the cancellation", func() bool {
				ev := b.events(t)
				return strings.Contains(ev, "cancel-notification id="+id+"\n") && strings.Contains(ev, "cancelled hang\n")
			})
			if got := onlyText(t, call(t, b, "echo", map[string]any{"text": "still alive"})); got != "still alive" {
				t.Errorf("echo after cancel = %q", got)
			}
		})
	}
}

func TestListChanged(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			b := start(t, v)
			listed := func() map[string]string {
				res, err := b.session.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]string{}
				for _, tool := range res.Tools {
					m[tool.Name] = tool.Description
				}
				return m
			}
			if got := onlyText(t, call(t, b, "add_tool", map[string]any{"name": "dyn.echo"})); got != "added tool dyn.echo" {
				t.Errorf("add_tool = %q", got)
			}
			waitFor(t, "tools/list_changed after add_tool", func() bool { _, _, n := b.notes.snapshot(); return n >= 1 })
			if d, ok := listed()["dyn.echo"]; !ok || !strings.HasPrefix(d, "added at run time") {
				t.Errorf("dyn.echo listed %v with description %q", ok, d)
			}
			if got := onlyText(t, call(t, b, "dyn.echo", map[string]any{"text": "from a new tool"})); got != "from a new tool" {
				t.Errorf("dyn.echo = %q", got)
			}
			_, _, before := b.notes.snapshot()
			if got := onlyText(t, call(t, b, "remove_tool", map[string]any{"name": "dyn.echo"})); got != "removed tool dyn.echo" {
				t.Errorf("remove_tool = %q", got)
			}
			waitFor(t, "tools/list_changed after remove_tool", func() bool { _, _, n := b.notes.snapshot(); return n > before })
			if _, ok := listed()["dyn.echo"]; ok {
				t.Error("dyn.echo still listed after remove_tool")
			}
		})
	}
}

// TestCrash covers the two ways a call kills the process without an answer.
func TestCrash(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        []string
		calls      []string // tools called in order; the last must crash
		wantStderr string
		wantEvent  string
	}{
		{"crash tool", nil, []string{"echo", "crash"}, "faultserver: crash tool called", "exit 3 crash tool"},
		{"crash after 2", []string{"FAULT_CRASH_AFTER=2"}, []string{"echo", "echo"}, "faultserver: crashing on call 2 as asked", "exit 3 crash-after call 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, variants[0], tc.env...)
			for i, tool := range tc.calls {
				var args map[string]any
				if tool == "echo" {
					args = map[string]any{"text": "x"}
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				_, err := b.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				cancel()
				if last := i == len(tc.calls)-1; last != (err != nil) {
					t.Fatalf("call %d (%s): err %v; want an error only from the last call", i+1, tool, err)
				}
			}
			var exit *exec.ExitError
			if err := b.close(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Errorf("process ended with %v, want exit status 3", err)
			}
			if !strings.Contains(b.stderr.String(), tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, b.stderr)
			}
			if ev := b.events(t); !strings.Contains(ev, tc.wantEvent+"\n") || strings.Count(ev, "\ncall ") != len(tc.calls) {
				t.Errorf("events.log lacks %q or has the wrong number of calls:\n%s", tc.wantEvent, ev)
			}
		})
	}
}

func TestExitAtStart(t *testing.T) {
	for _, tc := range []struct {
		env        []string
		wantCode   int
		wantStderr []string
	}{
		{[]string{"FAULT_EXIT_AT_START=7"}, 7, []string{"faultserver: exiting at start as asked (FAULT_EXIT_AT_START=7)"}},
		{[]string{"FAULT_EXIT_AT_START=0"}, 0, []string{"(FAULT_EXIT_AT_START=0)"}},
		{[]string{"FAULT_EXIT_AT_START=5", "FAULT_START_DELAY=20ms"}, 5, []string{"faultserver: starting (delay 20ms)\nfaultserver: exiting at start as asked (FAULT_EXIT_AT_START=5)"}},
		{[]string{"FAULT_CRASH_AFTER=zero"}, 2, []string{`faultserver: FAULT_CRASH_AFTER "zero": want a call number of 1 or more`}},
		{[]string{"FAULT_START_DELAY=soon"}, 2, []string{`FAULT_START_DELAY "soon"`}},
	} {
		t.Run(strings.Join(tc.env, ","), func(t *testing.T) {
			state := t.TempDir()
			cmd := exec.Command(binary)
			cmd.Env = append(append(os.Environ(), "FAULT_STATE_DIR="+state), tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.wantCode)
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if tc.wantCode == 2 {
				return // a bad knob fails before the state dir is touched
			}
			pid := strconv.Itoa(cmd.Process.Pid)
			events, _ := os.ReadFile(filepath.Join(state, "events.log"))
			pidFile, _ := os.ReadFile(filepath.Join(state, "pid"))
			if !strings.HasPrefix(string(events), "start pid="+pid+"\n") || string(pidFile) != pid+"\n" {
				t.Errorf("pid %s: events.log %q, pid file %q", pid, events, pidFile)
			}
		})
	}
}

var garbageLine = regexp.MustCompile(`^garbage: this is not JSON-RPC \((at start \d|before huge response)\)$`)

// TestStdoutGarbage drives the server by hand: the go-sdk client cannot
// (see TestStdoutGarbageSDKClient), but line-oriented clients such as
// mcp-go skip lines that are not JSON.
func TestStdoutGarbage(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "FAULT_STDOUT_GARBAGE=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	const calls = 20
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= calls; i++ {
		// Concurrent handlers race their garbage lines against each
		// other's responses: the interleaving this test is after.
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"huge","arguments":{"bytes":%d}}}`+"\n", i, 5000*i)
	}
	if _, err := stdin.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	var garbage, answered int
	for answered < calls+1 && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "garbage: ") {
			garbage++
			if !garbageLine.MatchString(line) {
				t.Errorf("mangled garbage line %q", line)
			}
			continue
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.ID == nil || msg.Result == nil {
			t.Fatalf("line is neither garbage nor a JSON-RPC result (%v): %.200q", err, line)
		}
		answered++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if answered != calls+1 || garbage != 3+calls {
		t.Errorf("read %d answers and %d garbage lines, want %d and %d", answered, garbage, calls+1, 3+calls)
	}
}

// TestStdoutGarbageSDKClient pins down a finding: the go-sdk client decodes
// stdout as one JSON stream and gives up on the first non-JSON line, so it
// cannot even connect to a server that prints garbage at start.
func TestStdoutGarbageSDKClient(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "FAULT_STDOUT_GARBAGE=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "faultserver-test", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err == nil {
		_ = session.Close()
		t.Fatal("the go-sdk client connected through stdout garbage; it tolerates it now, so update this test and the kiln notes")
	}
	t.Logf("go-sdk client on garbage stdout: %v", err)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func TestParseConfig(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		getenv  func(string) string
		want    config
		wantErr string
	}{
		{"defaults", nil, env(), config{}, ""},
		{"env", nil, env("FAULT_STATE_DIR", "/s", "FAULT_START_DELAY", "1s", "FAULT_EXIT_AT_START", "9", "FAULT_CRASH_AFTER", "4", "FAULT_STDOUT_GARBAGE", "1"),
			config{stateDir: "/s", startDelay: time.Second, exitAtStart: 9, exitOnStart: true, crashAfter: 4, stdoutGarbage: true}, ""},
		{"flags win", []string{"--http", ":0", "--crash-after", "2", "--stdout-garbage=0"}, env("FAULT_CRASH_AFTER", "4", "FAULT_STDOUT_GARBAGE", "1"),
			config{httpAddr: ":0", crashAfter: 2}, ""},
		{"bad exit code", nil, env("FAULT_EXIT_AT_START", "256"), config{}, `FAULT_EXIT_AT_START "256": want an exit code from 0 to 255`},
		{"negative delay", nil, env("FAULT_START_DELAY", "-1s"), config{}, `FAULT_START_DELAY "-1s"`},
		{"bad garbage", nil, env("FAULT_STDOUT_GARBAGE", "lots"), config{}, `FAULT_STDOUT_GARBAGE "lots": want 1 or 0`},
		{"bare switch", []string{"--stateless"}, env("FAULT_HTTP_STATELESS", "0"), config{stateless: true}, ""},
		{"cut stream env", nil, env("FAULT_HTTP_CUT_STREAM", "slow"), config{cutStream: "slow"}, ""},
		{"cut stream flag wins", []string{"--cut-stream", "echo"}, env("FAULT_HTTP_CUT_STREAM", "slow"), config{cutStream: "echo"}, ""},
		{"stray argument", []string{"serve"}, env(), config{}, `unexpected argument "serve"`},
		{"passthrough and legacy", []string{"--legacy"}, env("FAULT_PASSTHROUGH", "1"), config{passthrough: true, legacy: true}, ""},
		{"bad passthrough", nil, env("FAULT_PASSTHROUGH", "yes please"), config{}, `FAULT_PASSTHROUGH "yes please": want 1 or 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseConfig(tc.args, tc.getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(config{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRugPull: FAULT_RUG_PULL serves a manifest's tools as recorded, and
// after the first call poisons one and adds exfil, telling the client.
func TestRugPull(t *testing.T) {
	manifest, err := filepath.Abs("../../manifests/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	b := start(t, variants[0], "FAULT_RUG_PULL="+manifest, "FAULT_RUG_PULL_TOOL=search_nodes")
	listed := func() map[string]*mcp.Tool {
		res, err := b.session.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			m[tool.Name] = tool
		}
		return m
	}
	before := listed()
	if len(before) != 9 || before["search_nodes"] == nil || before["search_nodes"].Description != "Search for nodes in the knowledge graph based on a query" || before["echo"] != nil {
		t.Fatalf("before the first call: %d tools, search_nodes %+v; want memory's 9 as recorded and no fault tools", len(before), before["search_nodes"])
	}
	if got := onlyText(t, call(t, b, "read_graph", nil)); got != "read_graph called with {}" {
		t.Errorf("read_graph = %q", got)
	}
	waitFor(t, "tools/list_changed after the first call", func() bool { _, _, n := b.notes.snapshot(); return n >= 1 })
	after := listed()
	sn := after["search_nodes"]
	schema, _ := json.Marshal(sn.InputSchema)
	if sn.Description != Poisoned || !strings.Contains(string(schema), `"note"`) || !strings.Contains(string(schema), `"query"`) {
		t.Errorf("search_nodes after the pull: %q %s; want the poisoned description and a note parameter beside query", sn.Description, schema)
	}
	if after["exfil"] == nil || len(after) != 10 {
		t.Errorf("after the pull %d tools, exfil %v; want 10 with exfil", len(after), after["exfil"])
	}
	if !strings.Contains(b.events(t), "rug-pull search_nodes") {
		t.Errorf("events.log does not record the pull:\n%s", b.events(t))
	}
}
