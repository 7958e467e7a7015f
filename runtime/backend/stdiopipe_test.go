package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/config"
)

// dialRaw connects to the test server in mode on a session whose calls
// take the raw path (stdio, before protocol 2026-07-28).
func dialRaw(t *testing.T, mode string, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := dialOnce(ctx, stdioConfig(t, mode), opts, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.rawPath() {
		t.Fatalf("a %s stdio session does not take the raw path", c.protocol)
	}
	return c
}

func TestScanResponse(t *testing.T) {
	type want struct {
		OK            bool
		ID            string
		Result, Error string
	}
	for _, tc := range []struct {
		line string
		want want
	}{
		{`{"jsonrpc":"2.0","id":"kiln-call-7","result":{"content":[]}}` + "\n", want{true, `"kiln-call-7"`, `{"content":[]}`, ""}},
		// Members in any order, with white space anywhere JSON allows it.
		{` { "result" : {"a":"}\"{"} , "id" : "kiln-call-8" , "jsonrpc":"2.0" } `, want{true, `"kiln-call-8"`, `{"a":"}\"{"}`, ""}},
		{`{"jsonrpc":"2.0","id":"kiln-call-9","error":{"code":-32602,"message":"Unknown tool"}}`, want{true, `"kiln-call-9"`, "", `{"code":-32602,"message":"Unknown tool"}`}},
		{`{"jsonrpc":"2.0","id":"kiln-call-9","result":null}`, want{true, `"kiln-call-9"`, "null", ""}},
		// Not a response to one of kiln's calls.
		{`{"jsonrpc":"2.0","id":3,"result":{"text":"\"id\":\"kiln-call-1\""}}`, want{}},
		{`{"jsonrpc":"2.0","result":{"id":"kiln-call-1"}}`, want{}},
		{`{"jsonrpc":"2.0","id":"kiln-call-2","method":"sampling/createMessage","params":{}}`, want{}},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":"kiln-call-1"}}`, want{}},
		{`{"jsonrpc":"2.0","id":"kiln-`, want{}},
		{`{"jsonrpc":"2.0","id":"kiln-call-1","result":{}`, want{}},
		{`["kiln-call-1"]`, want{}},
		{`not json`, want{}},
		{``, want{}},
	} {
		r, ok := scanResponse(tc.line)
		got := want{OK: ok}
		if ok {
			got = want{true, r.id, tc.line[r.result[0]:r.result[1]], tc.line[r.error[0]:r.error[1]]}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("scanResponse(%q) (-want +got):\n%s", tc.line, diff)
		}
	}
}

func TestAppendCallRequest(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		meta             map[string]any
		want             string // the line, without its newline
		err              string
	}{
		{"plain", "echo", `{"message":"hi"}`, nil,
			`{"jsonrpc":"2.0","id":"kiln-call-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, ""},
		{"meta", "echo", `{}`, map[string]any{"progressToken": 5, "traceparent": "00-ab"},
			`{"jsonrpc":"2.0","id":"kiln-call-1","method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":5,"traceparent":"00-ab"}}}`, ""},
		{"quoted name", "say \"hi\"\n\xff", `{}`, nil,
			`{"jsonrpc":"2.0","id":"kiln-call-1","method":"tools/call","params":{"name":"say \"hi\"\n\ufffd","arguments":{}}}`, ""},
		// A line is a message on stdio: arguments that span lines are
		// compacted, strings untouched.
		{"multi-line", "echo", "{\n  \"a\": \"x y\",\r\n  \"b\": [1, 2]\n}", nil,
			`{"jsonrpc":"2.0","id":"kiln-call-1","method":"tools/call","params":{"name":"echo","arguments":{"a":"x y","b":[1,2]}}}`, ""},
		{"not JSON", "echo", `{"a":`, nil, "", "arguments are not valid JSON"},
		{"not JSON over lines", "echo", "{\n\"a\":", nil, "", "arguments are not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, err := appendCallRequest([]byte("x"), "kiln-call-1", tc.tool, json.RawMessage(tc.args), tc.meta)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(line); got != "x"+tc.want+"\n" {
				t.Errorf("line =\n%s\nwant\nx%s", got, tc.want)
			}
			if !json.Valid(line[1:]) {
				t.Errorf("line is not JSON: %s", line[1:])
			}
		})
	}
}

// TestRawCallSurvivesNoise: lines on the backend's stdout that are not
// JSON, cut short, answer a call never made or quote a call's id do not
// disturb calls, large requests and results (MBs, past the pipes' and
// the reader's buffers) arrive whole, and the SDK's own requests still
// get their answers on the same stdout.
func TestRawCallSurvivesNoise(t *testing.T) {
	c := dialRaw(t, "noisy", Options{})
	// A bound on a lost line, not a timing check.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	m, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("tools/list through the SDK: %v", err)
	}
	if len(m.Tools) != 11 {
		t.Errorf("%d tools listed, want 11", len(m.Tools))
	}
	for _, n := range []int{0, 100, 70 << 10, 5 << 20} {
		r, err := c.CallTool(ctx, "big", json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), CallOptions{})
		if err != nil {
			t.Fatalf("big %d: %v", n, err)
		}
		if got := r.TextContent(); got != strings.Repeat("x", n) {
			t.Errorf("big %d: %d bytes back", n, len(got))
		}
	}
	long := strings.Repeat("y", 3<<20)
	r, err := c.CallTool(ctx, "either", json.RawMessage("{\n  \"a\": \""+long+"\"\n}"), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.TextContent(), `{"a":"`+long+`"}`; got != want {
		t.Errorf("either echoed %d bytes, want the compacted %d", len(got), len(want))
	}
	if _, err := c.CallTool(ctx, "nope", json.RawMessage(`{}`), CallOptions{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown tool = %v, want the backend's JSON-RPC error", err)
	}
	if _, err := c.CallTool(ctx, "either", json.RawMessage(`{"a":`), CallOptions{}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("arguments that are not JSON = %v", err)
	}
	if err := c.Probe(ctx); err != nil {
		t.Errorf("ping through the SDK after the calls: %v", err)
	}
}

// TestRawCallsRunConcurrently: many calls in flight on one pipe each get
// their own answer.
func TestRawCallsRunConcurrently(t *testing.T) {
	c := dialRaw(t, "serve", Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 16*20)
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				want := fmt.Sprintf(`{"a":"g%d-%d"}`, g, i)
				r, err := c.CallTool(t.Context(), "either", json.RawMessage(want), CallOptions{})
				if err != nil {
					errs <- err
					return
				}
				if got := r.TextContent(); got != want {
					errs <- fmt.Errorf("call %s answered %s", want, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRawCallNotificationsComeFirst: the progress and log notifications a
// backend writes before a call's result reach kiln before the call
// returns, as they did when mcp-go read every line: kiln forwards them to
// the caller only while the call runs.
func TestRawCallNotificationsComeFirst(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	c := dialRaw(t, "scripted", Options{OnNotification: func(method string, params json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, method+" "+string(params))
	}})
	for i := range 200 {
		mu.Lock()
		seen = nil
		mu.Unlock()
		token := fmt.Sprintf("t%d", i)
		r, err := c.CallTool(t.Context(), "chatty", nil, CallOptions{ProgressToken: token})
		if err != nil || r.TextContent() != "ok" {
			t.Fatalf("chatty: %v, %+v", err, r)
		}
		mu.Lock()
		got := append([]string(nil), seen...)
		mu.Unlock()
		want := []string{
			`notifications/progress {"_meta":{},"progress":1,"progressToken":"` + token + `"}`,
			`notifications/message {"_meta":{},"data":"chatty done","level":"info"}`,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("call %d: notifications seen when it returned (-want +got):\n%s", i, diff)
		}
	}
}

// TestRawCallsEndWhenProcessDies: every call pending when the backend's
// process dies fails as ErrGone, and the session reports the exit.
func TestRawCallsEndWhenProcessDies(t *testing.T) {
	started := make(chan struct{}, 4)
	c := dialRaw(t, "hang", Options{OnNotification: func(method string, _ json.RawMessage) {
		if method == "notifications/progress" {
			started <- struct{}{}
		}
	}})
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := c.CallTool(t.Context(), "hang", nil, CallOptions{ProgressToken: i})
			errs <- err
		}()
	}
	for range 4 {
		<-started
	}
	if err := syscall.Kill(c.proc.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-errs; !errors.Is(err, ErrGone) {
			t.Errorf("a call pending when the process died = %v, want ErrGone", err)
		}
	}
	<-c.Done()
	if _, err := c.CallTool(t.Context(), "either", json.RawMessage(`{"a":"x"}`), CallOptions{}); !errors.Is(err, ErrGone) {
		t.Errorf("a call after the exit = %v, want ErrGone", err)
	}
}

// TestRawCallEndsOnClose: closing the session ends a call still waiting
// with an error instead of leaving it to its deadline.
func TestRawCallEndsOnClose(t *testing.T) {
	started := make(chan struct{}, 1)
	c := dialRaw(t, "hang", Options{OnNotification: func(method string, _ json.RawMessage) {
		if method == "notifications/progress" {
			started <- struct{}{}
		}
	}})
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.WithoutCancel(t.Context()), "hang", nil, CallOptions{ProgressToken: "c"})
		errc <- err
	}()
	<-started
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("a call pending at Close succeeded")
	}
}

// TestRawCallBackendAsks: a backend's request during a raw call (here
// elicitation) reaches kiln's routing, which stdio leaves no way to tie to
// the call, and its answer reaches the backend.
func TestRawCallBackendAsks(t *testing.T) {
	routed := &answer{result: `{"action":"accept","content":{"name":"ada"}}`}
	c := dialRaw(t, "serve", Options{OnRequest: routed.ClientRequest})
	r, err := c.CallTool(t.Context(), "ask", nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.TextContent(); got != "accept:map[name:ada]" || len(routed.methods) != 1 || !strings.HasPrefix(routed.methods[0], "elicitation/create ") {
		t.Errorf("ask answered %q after kiln was asked %v", got, routed.methods)
	}
}

// panicReader stands for a line that makes the stdout reader panic.
type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("a line the reader cannot take") }

// TestReaderPanicKillsTheBackend: a panic reading a backend's stdout is
// logged, not the end of kiln, and the backend's process is killed: no one
// reads it any more, and its exit ends the connection, which the
// supervisor starts again. Left running, the backend would stay connected
// and deaf for good.
func TestReaderPanicKillsTheBackend(t *testing.T) {
	var logs bytes.Buffer
	p := newStdioPipe(&config.Backend{Name: "deaf", Transport: config.TransportStdio, Command: "sleep", Args: []string{"300"}}, newRing(1024))
	p.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	p.read(panicReader{}) // as the reader start began would, had a line made it panic
	err := p.close()      // waits for the process: five minutes unless it was killed
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the backend's process ended with %v; want it killed", err)
	}
	if out := logs.String(); !strings.Contains(out, "reading backend deaf's stdout stopped") || !strings.Contains(out, "stack=") {
		t.Errorf("the panic was not logged with its stack:\n%s", out)
	}
}
