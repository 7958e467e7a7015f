package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

func stdioConfig(t *testing.T, mode string) *config.Backend {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &config.Backend{
		Name: "test", Transport: config.TransportStdio, Command: exe, Cwd: t.TempDir(), Enabled: true,
		Env: map[string]string{"KILN_TEST_SERVER": mode, "GITHUB_TOKEN": "ghp_case_kept"},
	}
}

func dial(t *testing.T, cfg *config.Backend) *Conn {
	t.Helper()
	c, err := DialTimeout(t.Context(), cfg, 20*time.Second, Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStdioSnapshotKeepsRawSchemas(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	m, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
	}
	// Pagination limit 2 on the server: ten tools arrive over five pages.
	if diff := cmp.Diff([]string{"ask", "caps", "die", "either", "env", "environ", "fail", "image", "spawn", "structured"}, sorted(names)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	for _, tool := range m.Tools {
		if tool.Name != "either" {
			continue
		}
		got, _ := manifest.Compact(tool.InputSchema)
		if string(got) != anyOfSchema {
			t.Errorf("inputSchema not kept verbatim:\n got %s\nwant %s", got, anyOfSchema)
		}
	}
	if m.Server.Name != "kiln-test-server" || m.Server.Version != "1.2.3" || m.ProtocolVersion == "" {
		t.Errorf("server info = %+v protocol %q", m.Server, m.ProtocolVersion)
	}
}

// TestSnapshotRefusesNonObjectSchema: a live tool list with a tool whose
// inputSchema is not an object schema is refused, naming the tool and the
// fix, for record and for kiln serve alike.
func TestSnapshotRefusesNonObjectSchema(t *testing.T) {
	c := dial(t, stdioConfig(t, "badschema"))
	_, err := c.Snapshot(t.Context())
	if !errors.Is(err, manifest.ErrInputSchema) {
		t.Fatalf("Snapshot = %v, want ErrInputSchema", err)
	}
	for _, want := range []string{`backend "test"`, `tool "shout"`, `"type" is "string"`, "must publish an object schema"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestCallToolPassesResultsThrough(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	tests := []struct {
		tool, args string
		isError    bool
		content    string // canonical JSON of the content array
		structured string
	}{
		{"either", `{"a":"x"}`, false, `[{"text":"{\"a\":\"x\"}","type":"text"}]`, ""},
		{"image", `{}`, false, `[{"text":"here","type":"text"},{"data":"iVBORw0KGgo=","mimeType":"image/png","type":"image"}]`, ""},
		{"fail", `{}`, true, `[{"text":"quota exhausted","type":"text"}]`, ""},
		{"structured", `{}`, false, `[{"text":"{\"temp\":21.5,\"unit\":\"C\"}","type":"text"}]`, `{"temp":21.5,"unit":"C"}`},
		// Env keys keep their case on the way into the subprocess.
		{"env", `{}`, false, `[{"text":"ghp_case_kept|","type":"text"}]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			r, err := c.CallTool(t.Context(), tc.tool, json.RawMessage(tc.args), CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(r.Content)
			got, _ := manifest.Compact(raw)
			if string(got) != tc.content || r.IsError != tc.isError {
				t.Errorf("got isError=%v content=%s\nwant isError=%v content=%s", r.IsError, got, tc.isError, tc.content)
			}
			gotS, _ := manifest.Compact(r.StructuredContent)
			if string(gotS) != tc.structured {
				t.Errorf("structuredContent = %s, want %s", gotS, tc.structured)
			}
		})
	}
}

func TestDialFailureShowsStderr(t *testing.T) {
	_, err := DialTimeout(t.Context(), stdioConfig(t, "crash"), 20*time.Second, Options{})
	if err == nil {
		t.Fatal("Dial of a crashing server succeeded")
	}
	for _, want := range []string{`backend "test"`, "SERVICE_API_KEY is not set"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCloseStopsProcessGroup(t *testing.T) {
	c := dial(t, stdioConfig(t, "serve"))
	r, err := c.CallTool(t.Context(), "spawn", nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(r.TextContent())
	if err != nil {
		t.Fatalf("spawn answered %q", r.TextContent())
	}
	c.Close()
	// The grandchild was in the backend's process group, so it is gone
	// (or a zombie about to be reaped by init) once Close returns.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d of the backend survived Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

func TestHTTPTransports(t *testing.T) {
	s := testServer()
	streamable := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(streamable.Close)
	sse := httptest.NewUnstartedServer(nil)
	sse.Config.Handler = server.NewSSEServer(s, server.WithBaseURL("http://"+sse.Listener.Addr().String()))
	sse.Start()
	t.Cleanup(sse.Close)

	for _, cfg := range []*config.Backend{
		{Name: "streamable", Transport: config.TransportHTTP, URL: streamable.URL + "/mcp", Enabled: true},
		{Name: "legacy", Transport: config.TransportSSE, URL: sse.URL + "/sse", Enabled: true},
	} {
		t.Run(cfg.Transport, func(t *testing.T) {
			c := dial(t, cfg)
			m, err := c.Snapshot(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Tools) != 10 {
				t.Errorf("%d tools, want 10", len(m.Tools))
			}
			r, err := c.CallTool(t.Context(), "fail", nil, CallOptions{})
			if err != nil || !r.IsError {
				t.Errorf("fail: err=%v result=%+v", err, r)
			}
		})
	}
}

// TestRawCallMatchesSDKPath: on a stdio session before 2026-07-28 a call
// skips the SDK client (rawcall.go); its results and errors must be the
// ones the SDK client gives on the same session.
func TestRawCallMatchesSDKPath(t *testing.T) {
	cfg := stdioConfig(t, "serve")
	legacy, err := dialOnce(t.Context(), cfg, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { legacy.Close() })
	if modern := dial(t, cfg); !legacy.rawPath() || modern.rawPath() {
		t.Fatalf("raw path: legacy (%s) %v, modern (%s) %v; want true, false", legacy.protocol, legacy.rawPath(), modern.protocol, modern.rawPath())
	}
	for _, tc := range []struct{ tool, args string }{
		{"either", `{"a":"x"}`}, {"image", `{}`}, {"fail", `{}`}, {"structured", `{}`}, {"env", `{}`},
		{"nope", `{}`}, // a JSON-RPC error: unknown tool
	} {
		t.Run(tc.tool, func(t *testing.T) {
			opts := CallOptions{ProgressToken: "p1"}
			want, wantErr := legacy.callSDK(t.Context(), tc.tool, json.RawMessage(tc.args), opts)
			got, gotErr := legacy.CallTool(t.Context(), tc.tool, json.RawMessage(tc.args), opts)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error = %v, want %v", gotErr, wantErr)
			}
			if gotErr == nil && tc.tool == "nope" {
				t.Fatal("an unknown tool did not fail")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-SDK path +raw path):\n%s", diff)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := legacy.CallTool(ctx, "either", json.RawMessage(`{}`), CallOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled call = %v, want context.Canceled", err)
	}
	// The session survives all of it.
	if r, err := legacy.CallTool(t.Context(), "either", json.RawMessage(`{"b":1}`), CallOptions{}); err != nil || r.IsError {
		t.Errorf("a call after the others = %+v, %v", r, err)
	}
	// A backend that dies mid-call is reported gone, with its stderr.
	if _, err := legacy.CallTool(t.Context(), "die", json.RawMessage(`{}`), CallOptions{}); !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "die tool called") {
		t.Errorf("a call the backend died in = %v, want ErrGone with its stderr", err)
	}
}

// TestRawCallCancelReachesBackend: a call canceled on the raw path tells
// the backend (notifications/cancelled), which stops the handler.
func TestRawCallCancelReachesBackend(t *testing.T) {
	started, stopped := make(chan struct{}, 1), make(chan struct{}, 1)
	c, err := dialOnce(t.Context(), stdioConfig(t, "hang"), Options{OnNotification: func(method string, params json.RawMessage) {
		switch {
		case method == "notifications/progress":
			started <- struct{}{}
		case method == "notifications/message" && strings.Contains(string(params), "hang canceled"):
			stopped <- struct{}{}
		}
	}}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.rawPath() {
		t.Fatalf("a %s stdio session does not take the raw path", c.protocol)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "hang", nil, CallOptions{ProgressToken: "h1"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the canceled call = %v, want context.Canceled", err)
	}
	select {
	case <-stopped:
	case <-time.After(20 * time.Second): // a bound on a lost notification, not a timing check
		t.Fatal("the backend's handler was not canceled")
	}
}
