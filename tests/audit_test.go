//go:build e2e

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kilnmcp/kiln/runtime/audit"
)

// auditLines reads the audit log at path (a missing file is empty).
func auditLines(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q is not whole JSON: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// waitAudit polls until at least n call lines are in the log (a batch is
// written every flush interval) or 20 s pass.
func waitAudit(t *testing.T, path string, n int) []audit.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var calls []audit.Record
		for _, r := range auditLines(t, path) {
			if r.Event == audit.EventCall {
				calls = append(calls, r)
			}
		}
		if len(calls) >= n || time.Now().After(deadline) {
			return calls
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAuditMixedLoad: every call of a bounded mixed load through a real
// kiln serve --http (ok, isError, refused by policy, rate-limited,
// timeout, from two JWT identities, tiers 1-3) is one line with the right
// outcome, identity, tier and argument digest, and no argument value.
func TestAuditMixedLoad(t *testing.T) {
	is := newIssuer(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	gw := is.gatewayAuth() + "\n  audit:\n    path: " + path + "\n    flush: 50ms"
	cfg := withPolicies(t, peerConfig(t, peerOptions{Gateway: gw, OnlyEverything: true}), `
policies:
  - match: {kind: jwt, subject: ci-bot}
    allow: ["everything.echo", "everything.trigger-long-running-operation", "everything.get-tiny-image"]
  - match: {kind: jwt, subject: limited}
    allow: ["everything.*"]
    rate: 0.01
    burst: 2
`)
	base := startHTTP(t, "--config", cfg)
	ci := mcpgoAs(t, base, is.token(t, "ci-bot", nil))
	limited := sdkAs(t, base, is.token(t, "limited", nil))

	type want struct{ identity, tool, tier, outcome, args string }
	var wants []want
	var mu sync.Mutex
	add := func(w want) { mu.Lock(); wants = append(wants, w); mu.Unlock() }

	// Wait for the backend once, so no call below meets it starting.
	chain(t, ci, `{"tool": "everything.echo", "arguments": {"message": "warm"}}`)
	add(want{"jwt ci-bot", "everything.echo", "1", audit.OutcomeOK, `{"message":"warm"}`})

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			msg := fmt.Sprintf("audit-secret-%02d", i)
			var r result
			switch i % 3 {
			case 0:
				r = chain(t, ci, fmt.Sprintf(`{"tool": "everything.echo", "arguments": {"message": %q}}`, msg))
				add(want{"jwt ci-bot", "everything.echo", "1", audit.OutcomeOK, fmt.Sprintf(`{"message":%q}`, msg)})
			case 1:
				r = chain(t, ci, fmt.Sprintf(`await everything.echo({message: %q})`, msg))
				add(want{"jwt ci-bot", "everything.echo", "2", audit.OutcomeOK, fmt.Sprintf(`{"message":%q}`, msg)})
			default:
				// A program, not a literal call: tier 3.
				r = chain(t, ci, fmt.Sprintf(`const parts = [%q]; const r = await everything.echo({message: parts.join("")}); return r;`, msg))
				add(want{"jwt ci-bot", "everything.echo", "3", audit.OutcomeOK, fmt.Sprintf(`{"message":%q}`, msg)})
			}
			if r.IsError {
				t.Errorf("call %d failed: %s", i, r.Text())
			}
		})
	}
	wg.Wait()
	// Refused by policy: get-sum is not ci-bot's.
	r := chain(t, ci, `{"tool": "everything.get-sum", "arguments": {"a": 1, "b": 2}}`)
	if !r.IsError || !strings.Contains(r.Text(), denied) {
		t.Fatalf("ci's get-sum: %s", r.Text())
	}
	add(want{"jwt ci-bot", "everything.get-sum", "1", audit.OutcomeDenied, `{"a":1,"b":2}`})
	// Rate-limited: burst 2, then refused.
	for i := range 4 {
		r := chain(t, limited, fmt.Sprintf(`{"tool": "everything.get-sum", "arguments": {"a": %d, "b": 1}}`, i))
		o := audit.OutcomeOK
		if i >= 2 {
			o = audit.OutcomeRateLimited
		}
		if (o == audit.OutcomeOK) == r.IsError {
			t.Fatalf("limited call %d: %s", i, r.Text())
		}
		add(want{"jwt limited", "everything.get-sum", "1", o, fmt.Sprintf(`{"a":%d,"b":1}`, i)})
	}
	// Timeout: the run's limit ends a 10 s operation.
	r = callReady(t, ci, "call_tool_chain", map[string]any{"code": `{"tool": "everything.trigger-long-running-operation", "arguments": {"duration": 10, "steps": 2}}`, "timeout": 300})
	if !r.IsError {
		t.Fatalf("the long operation was not cut at 300 ms: %s", r.Text())
	}
	add(want{"jwt ci-bot", "everything.trigger-long-running-operation", "1", audit.OutcomeTimeout, `{"duration":10,"steps":2}`})

	calls := waitAudit(t, path, len(wants))
	if len(calls) != len(wants) {
		t.Errorf("%d call lines, want %d (one per call)", len(calls), len(wants))
	}
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.ArgsSHA256]++
		if c.Replica == "" || c.Time.IsZero() {
			t.Errorf("line without replica or time: %+v", c)
		}
	}
	for _, w := range wants {
		d := audit.Digest([]byte(w.args))
		if seen[d] != 1 {
			t.Errorf("%s %s: %d lines, want exactly 1", w.tool, w.args, seen[d])
			continue
		}
		for _, c := range calls {
			if c.ArgsSHA256 == d && (c.Identity != w.identity || c.Tool != w.tool || c.Tier != w.tier || c.Outcome != w.outcome) {
				t.Errorf("%s: got identity %q tool %q tier %q outcome %q, want %+v", w.args, c.Identity, c.Tool, c.Tier, c.Outcome, w)
			}
		}
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "audit-secret") {
		t.Error("an argument value is in the audit log, which gateway.audit.values did not ask for")
	}
}

// TestAuditKill9: kill -9 of kiln mid-load loses at most the batch not
// yet written: every call answered before a pause longer than the flush
// interval is in the log, and every line in it is whole JSON.
func TestAuditKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: "  audit:\n    path: " + path + "\n    flush: 50ms\n    values: true"})
	var cmd *exec.Cmd
	tr := transport.NewStdioWithOptions(kilnBin(t), nil, []string{"serve", "--config", cfg},
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd = exec.Command(command, args...)
			cmd.Dir = repoRoot(t)
			cmd.Stderr = testWriter{t, "kiln"}
			return cmd, nil
		}))
	s := startMCPGo(t, mcpclient.NewClient(tr))
	for i := range 30 {
		callReady(t, s, "call_tool_chain", map[string]any{"code": fmt.Sprintf(`{"tool": "everything.echo", "arguments": {"message": "before-%d"}}`, i)})
	}
	// Ten flush intervals with no call: the batch holding the calls above
	// is written by then.
	time.Sleep(500 * time.Millisecond)
	// Calls in flight when kiln dies.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if _, err := s.Call(context.Background(), "call_tool_chain", map[string]any{"code": fmt.Sprintf(`{"tool": "everything.echo", "arguments": {"message": "during-%d"}}`, i)}); err != nil {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	lines := auditLines(t, path) // fails on a line that is not whole
	got := map[string]bool{}
	for _, r := range lines {
		got[string(r.Args)] = true
	}
	for i := range 30 {
		if a := fmt.Sprintf(`{"message":"before-%d"}`, i); !got[a] {
			t.Errorf("call %s answered before the pause is missing after kill -9", a)
		}
	}
	t.Logf("%d lines survived kill -9", len(lines))
}

// TestAuditFullDisk: an audit log on a full disk (/dev/full fails every
// write with ENOSPC) turns kiln://health degraded and calls go on.
func TestAuditFullDisk(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: "  audit:\n    path: /dev/full\n    flush: 20ms"})
	base := startHTTP(t, "--config", cfg)
	s := newMCPGoHTTP(t, base)
	r := callReady(t, s, "call_tool_chain", map[string]any{"code": `{"tool": "everything.echo", "arguments": {"message": "on"}}`})
	if r.IsError || !strings.Contains(r.Text(), "on") {
		t.Fatalf("a call with the audit disk full: %s", r.Text())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := readHealth(t, base)
		if strings.Contains(h, `"degraded"`) && strings.Contains(h, "audit log") && strings.Contains(h, "no space left") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kiln://health does not report the full audit disk: %s", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := callReady(t, s, "call_tool_chain", map[string]any{"code": `{"tool": "everything.echo", "arguments": {"message": "still"}}`}); r.IsError {
		t.Fatalf("a call after the audit log failed: %s", r.Text())
	}
}

// TestAuditOTelLogs: with an OTLP endpoint and no audit file, each call
// reaches a real OTLP/HTTP logs endpoint as a log record carrying the
// audit fields, and no argument value.
func TestAuditOTelLogs(t *testing.T) {
	var mu sync.Mutex
	var records []map[string]string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/logs" {
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
		var msg collogspb.ExportLogsServiceRequest
		if !readOTLP(w, req, &msg) {
			return
		}
		mu.Lock()
		for _, rl := range msg.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					m := map[string]string{"event_name": lr.EventName, "body": lr.GetBody().GetStringValue()}
					for _, a := range lr.Attributes {
						m[a.Key] = a.GetValue().GetStringValue()
					}
					records = append(records, m)
				}
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(recv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "100")
	base := startHTTP(t, "--config", peerConfig(t, peerOptions{OnlyEverything: true}))
	s := newMCPGoHTTP(t, base)
	if r := callReady(t, s, "call_tool_chain", map[string]any{"code": `{"tool": "everything.echo", "arguments": {"message": "otel-secret"}}`}); r.IsError {
		t.Fatal(r.Text())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		var got map[string]string
		for _, m := range records {
			if m["event_name"] == "kiln.audit.call" && m["kiln.audit.tool"] == "everything.echo" && m["kiln.audit.outcome"] == "ok" {
				got = m
			}
		}
		all := fmt.Sprint(records)
		mu.Unlock()
		if got != nil {
			if want := audit.Digest([]byte(`{"message":"otel-secret"}`)); got["kiln.audit.args_sha256"] != want || got["kiln.audit.tier"] != "1" {
				t.Errorf("log record %v, want digest %s and tier 1", got, want)
			}
			if strings.Contains(all, "otel-secret") {
				t.Errorf("an argument value reached the log records: %s", all)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kiln.audit.call log record for everything.echo within 20s; got %s", all)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
