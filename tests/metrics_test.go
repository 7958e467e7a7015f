//go:build e2e

package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// opsKiln is `kiln serve --http` with gateway.metrics_addr, as operators
// run it: both listeners' addresses and the process, to signal.
type opsKiln struct {
	mcp, metrics string // base URLs
	cmd          *exec.Cmd
	exited       chan struct{} // closed once the process is reaped
	exitErr      error         // set before exited closes
	mu           sync.Mutex
	log          strings.Builder
}

var metricsListenRE = regexp.MustCompile(`serving metrics at (http://[^/\s]+)/metrics`)

// startOpsKiln writes cfg (with %[1]s standing for a temp folder) and runs
// kiln on it with extra environment variables.
func startOpsKiln(t *testing.T, cfg string, env ...string) *opsKiln {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &opsKiln{exited: make(chan struct{})}
	k.cmd = exec.Command(kilnBin(t), "serve", "--config", path, "--http", "127.0.0.1:0")
	k.cmd.Dir = repoRoot(t)
	k.cmd.Env = append(os.Environ(), env...)
	stderr, err := k.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mcpURL, metricsURL := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			t.Log("kiln: " + line)
			k.mu.Lock()
			k.log.WriteString(line + "\n")
			k.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				mcpURL <- m[1]
			}
			if m := metricsListenRE.FindStringSubmatch(line); m != nil {
				metricsURL <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		k.exitErr = k.cmd.Wait()
		close(k.exited)
	}()
	t.Cleanup(func() {
		_ = k.cmd.Process.Signal(os.Interrupt)
		select {
		case <-k.exited:
		case <-time.After(30 * time.Second):
			_ = k.cmd.Process.Kill()
			<-k.exited
		}
	})
	for k.mcp == "" || k.metrics == "" {
		select {
		case k.mcp = <-mcpURL:
		case k.metrics = <-metricsURL:
		case <-k.exited:
			t.Fatal("kiln exited before listening; its stderr is logged above")
		case <-time.After(30 * time.Second):
			t.Fatal("kiln did not report both listeners within 30s")
		}
	}
	return k
}

// logged returns what kiln has written to stderr so far.
func (k *opsKiln) logged() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.log.String()
}

// get fetches a URL and returns its status and body.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// waitReady polls /readyz until it answers 200, for up to a minute.
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := get(t, base+"/readyz")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still answers %d after a minute: %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// faultConfig serves the fault server as a required stdio backend, with
// metrics on a loopback port of their own.
func faultConfig(t *testing.T, gatewayExtra string) string {
	return fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  metrics_addr: 127.0.0.1:0
%s
backends:
  fault:
    command: %s
    required: true
    env:
      FAULT_STATE_DIR: %s
  everything:
    transport: stdio
    command: node
    args: [%s, stdio]
`, t.TempDir(), gatewayExtra, faultBin(t), t.TempDir(),
		filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

// TestMetricsPrometheus makes calls at each tier, checks the series on both
// listeners, lints the exposition with promtool and has a real Prometheus
// server scrape kiln and answer a query.
func TestMetricsPrometheus(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus: apt-get install -y prometheus); CI installs it")
	}
	prometheus, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus: apt-get install -y prometheus); CI installs it")
	}
	k := startOpsKiln(t, faultConfig(t, ""))
	waitReady(t, k.metrics)
	s := newSDKHTTP(t, k.mcp)
	// Streamable HTTP at 2026-07-28 is stateless; a legacy SSE client holds
	// the one session kiln_sessions_open counts.
	newMCPGoSSE(t, k.mcp)
	callReady(t, s, "call_tool_chain", map[string]any{"code": `{"tool": "everything.echo", "arguments": {"message": "one"}}`})
	if r := callReady(t, s, "call_tool_chain", map[string]any{"code": `{"tool": "fault.fail", "arguments": {"message": "no"}}`}); !r.IsError {
		t.Fatalf("fault.fail should fail: %s", r.Text())
	}
	if r := callReady(t, s, "call_tool_chain", map[string]any{"code": `const a = await fault.echo({text: "x"}); const b = await fault.echo({text: "y"}); return a + b;`}); r.IsError {
		t.Fatalf("tier-3 program: %s", r.Text())
	}
	if r := callReady(t, s, "search_tools", map[string]any{"task_description": "echo a message"}); r.IsError {
		t.Fatalf("search_tools: %s", r.Text())
	}

	_, front := get(t, k.mcp+"/metrics")
	_, side := get(t, k.metrics+"/metrics")
	t.Logf("scrape size: %d bytes", len(side))
	for _, want := range []string{
		`kiln_tool_calls_total{backend="everything",outcome="ok",tier="1",tool="echo"} 1`,
		`kiln_tool_calls_total{backend="fault",outcome="tool_error",tier="1",tool="other"} 1`,
		`kiln_tool_calls_total{backend="fault",outcome="ok",tier="3",tool="other"} 2`,
		`kiln_tool_call_duration_seconds_count{backend="everything",tier="1"} 1`,
		`kiln_meta_tool_calls_total{outcome="ok",tool="search_tools"} 1`,
		`kiln_search_requests_total 1`,
		`kiln_sandbox_runs_total{outcome="ok"} 1`,
		`kiln_backend_state{backend="fault",state="healthy"} 1`,
		`kiln_sessions_open 1`,
		`kiln_output_results_total 3`,
	} {
		for name, body := range map[string]string{"--http /metrics": front, "metrics_addr /metrics": side} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("%s lacks %s", name, want)
			}
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", side)
	}

	lint := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(side)
	if out, err := lint.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// A real Prometheus scrapes the --http listener and answers a query.
	dir := t.TempDir()
	target := strings.TrimPrefix(k.mcp, "http://")
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kiln\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freeLoopback(t)
	prom := exec.Command(prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	prom.Stderr = testWriter{t, "prometheus"}
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = prom.Process.Signal(syscall.SIGTERM)
		_ = prom.Wait()
	})
	query := "http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(`sum(kiln_tool_calls_total{job="kiln"}) > 0`)
	var got string
	eventually(t, "Prometheus returns kiln_tool_calls_total > 0", func() bool {
		res, err := http.Get(query)
		if err != nil {
			return false // still starting
		}
		defer res.Body.Close()
		var out struct {
			Status string
			Data   struct {
				Result []struct {
					Value []any
				}
			}
		}
		if json.NewDecoder(res.Body).Decode(&out) != nil || out.Status != "success" || len(out.Data.Result) != 1 {
			return false
		}
		got = fmt.Sprint(out.Data.Result[0].Value[1])
		return true
	})
	if got != "4" {
		t.Errorf("Prometheus: sum(kiln_tool_calls_total) = %s, want 4", got)
	}

	// A crash is counted as a restart of its backend.
	s.Call(t.Context(), "call_tool_chain", map[string]any{"code": `{"tool": "fault.crash"}`})
	eventually(t, "kiln_backend_events_total counts the fault server's restart", func() bool {
		_, body := get(t, k.metrics+"/metrics")
		return strings.Contains(body, `kiln_backend_events_total{backend="fault",event="restart"} 1`+"\n") &&
			strings.Contains(body, `kiln_tool_calls_total{backend="fault",outcome="backend_unavailable",tier="1",tool="other"} 1`+"\n")
	})
}

// freeLoopback returns a loopback address with a port free right now, for
// a server that takes no :0 and reports nothing (Prometheus).
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
