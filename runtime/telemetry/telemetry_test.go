package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/sandbox"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestLabelsAreBounded(t *testing.T) {
	m := NewMetrics(MetricsOptions{Known: map[string][]string{"everything": {"echo"}, "live": nil}})
	for _, c := range []struct{ backend, tool string }{
		{"everything", "echo"}, {"everything", "made_up"}, {"live", "echo"}, {"registered_at_runtime", "x"},
	} {
		m.ToolCall(c.backend, c.tool, "1", "ok", time.Millisecond)
	}
	body := scrape(t, m)
	for _, want := range []string{
		`kiln_tool_calls_total{backend="everything",outcome="ok",tier="1",tool="echo"} 1`,
		`kiln_tool_calls_total{backend="everything",outcome="ok",tier="1",tool="other"} 1`,
		`kiln_tool_calls_total{backend="live",outcome="ok",tier="1",tool="other"} 1`,
		`kiln_tool_calls_total{backend="other",outcome="ok",tier="1",tool="other"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(body, "made_up") || strings.Contains(body, "registered_at_runtime") {
		t.Errorf("an unknown name became a label value:\n%s", body)
	}
}

func TestSandboxOutcome(t *testing.T) {
	for _, c := range []struct {
		err            error
		outcome, limit string
	}{
		{nil, "ok", ""},
		{sandbox.ErrTimeout, "timeout", "timeout"},
		{sandbox.ErrMemory, "memory", "memory"},
		{sandbox.ErrBusy, "busy", "busy"},
		{sandbox.ErrThrown, "thrown", ""},
		{io.EOF, "error", ""},
	} {
		if o, l := sandboxOutcome(c.err); o != c.outcome || l != c.limit {
			t.Errorf("sandboxOutcome(%v) = %q, %q; want %q, %q", c.err, o, l, c.outcome, c.limit)
		}
	}
}

// outcomeRunner is a test double for the sandbox: it returns a fixed
// Outcome, so the wrapper's counting is checked without running a program
// (the sandbox's own tests check that Refused is set).
type outcomeRunner struct{ out *sandbox.Outcome }

func (r outcomeRunner) Run(context.Context, string, sandbox.RunOptions) (*sandbox.Outcome, error) {
	return r.out, nil
}

func TestMaxCallsCountedAsLimitHit(t *testing.T) {
	tel := &Telemetry{Metrics: NewMetrics(MetricsOptions{})}
	if _, err := tel.Sandbox(outcomeRunner{&sandbox.Outcome{Calls: 50, Refused: 3}}).Run(t.Context(), "", sandbox.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tel.Sandbox(outcomeRunner{&sandbox.Outcome{Calls: 2}}).Run(t.Context(), "", sandbox.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, tel.Metrics)
	for _, want := range []string{
		`kiln_sandbox_limit_hits_total{limit="max_calls"} 1`,
		`kiln_sandbox_runs_total{outcome="ok"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

type statusList []dispatch.Status

func (s *statusList) Status() []dispatch.Status { return *s }

func readyz(t *testing.T, h *Health) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.Readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

func TestReadiness(t *testing.T) {
	st := &statusList{{Name: "db", State: dispatch.StateStarting}, {Name: "web", State: dispatch.StateUnhealthy}}
	h := NewHealth(st, func() []string { return []string{"db"} })
	expect := func(code int, text string) {
		t.Helper()
		got, body := readyz(t, h)
		if got != code || !strings.Contains(body, text) {
			t.Errorf("readyz = %d %q, want %d containing %q", got, body, code, text)
		}
	}
	expect(503, "starting")
	h.Ready()
	expect(503, "required backends not connected: db (starting)")
	(*st)[0].State, (*st)[0].Listing = dispatch.StateHealthy, true
	expect(503, "required backends connected, their tools, resources and prompts being listed: db")
	(*st)[0].Listing = false
	(*st)[1].State, (*st)[1].Listing = dispatch.StateHealthy, true
	expect(200, "ready") // web is not required: its state does not matter
	(*st)[1].State = dispatch.StateUnhealthy
	// Both reasons at once: one required backend down, one listing.
	*st = append(*st, dispatch.Status{Name: "cache", State: dispatch.StateHealthy, Listing: true})
	h.required = func() []string { return []string{"db", "web", "cache"} }
	expect(503, "required backends not connected: web (unhealthy); kiln://health says why; required backends connected, their tools, resources and prompts being listed: cache")
	*st = (*st)[:2]
	h.required = func() []string { return []string{"db"} }
	h.Broken("sandbox: no worker")
	expect(503, "sandbox: no worker")
	h.broken.Store(nil)
	end := h.Begin()
	h.Drain()
	expect(503, "draining")
	waited := make(chan int)
	go func() { waited <- h.Wait(t.Context()) }()
	end()
	if left := <-waited; left != 0 {
		t.Errorf("Wait returned with %d calls in flight, want 0", left)
	}
	h.Begin() // never ends: Wait gives up with the context
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if left := h.Wait(ctx); left != 1 {
		t.Errorf("Wait after its context ended = %d, want 1", left)
	}
}

func TestTracesWanted(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		errText string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "only over OTLP"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "http/protobuf only"},
	} {
		on, err := tracesWanted(func(k string) string { return c.env[k] })
		if on != c.on || (err == nil) != (c.errText == "") || (err != nil && !strings.Contains(err.Error(), c.errText)) {
			t.Errorf("tracesWanted(%v) = %v, %v; want %v, error containing %q", c.env, on, err, c.on, c.errText)
		}
	}
}

// TestLogsWanted: log records read their own OTEL_LOGS_* variables and
// share the endpoint and the protocol check with traces.
func TestLogsWanted(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		errText string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_LOGS_EXPORTER": "none"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://c:4318/v1/logs"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_LOGS_EXPORTER": "console"}, false, "OTEL_LOGS_EXPORTER"},
		{map[string]string{"OTEL_LOGS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc"}, false, "http/protobuf only"},
	} {
		on, err := logsWanted(func(k string) string { return c.env[k] })
		if on != c.on || (c.errText == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errText)) {
			t.Errorf("logsWanted(%v) = %v, %v; want %v, error containing %q", c.env, on, err, c.on, c.errText)
		}
	}
}
