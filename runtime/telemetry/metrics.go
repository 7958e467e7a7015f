package telemetry

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/pipeline"
)

// other stands for any backend or tool not known at start.
const other = "other"

// StatusSource reports backend states; *dispatch.Dispatcher is one.
type StatusSource interface {
	Status() []dispatch.Status
}

// MetricsOptions wire the metrics to the gateway.
type MetricsOptions struct {
	// Status is read at each scrape for kiln_backend_state; optional.
	Status StatusSource
	// Counter is read at each scrape for the output byte counters;
	// optional.
	Counter *pipeline.Counter
	// Known lists the tools, by backend, that may appear in a tool label;
	// a backend listed with no tools still gets its own backend label.
	Known map[string][]string
}

// Metrics holds kiln's Prometheus series. Its methods are safe for
// concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg   *prometheus.Registry
	known map[string]map[string]bool

	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	meta         *prometheus.CounterVec
	metaSeconds  *prometheus.HistogramVec
	events       *prometheus.CounterVec
	sandboxRuns  *prometheus.CounterVec
	limitHits    *prometheus.CounterVec
	searches     prometheus.Counter
	searchSecond prometheus.Histogram
	sessions     prometheus.Gauge
}

// Latency buckets from 100µs (an in-process tier-1 call costs ~20µs, a
// stdio round trip ~300µs) to a minute (slow tools and tier-3 programs).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics registers kiln's series, the Go runtime's and the process's
// in a registry of their own (not the global one, so tests can build
// several).
func NewMetrics(opts MetricsOptions) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), known: map[string]map[string]bool{}}
	for b, tools := range opts.Known {
		set := map[string]bool{}
		for _, t := range tools {
			set[t] = true
		}
		m.known[b] = set
	}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kiln_tool_calls_total",
		Help: "Backend tool calls by backend, tool, tier (1 JSON, 2 literal TypeScript call, 3 sandbox program, direct for exposed tools) and outcome (ok, tool_error or a dispatch error code)."},
		[]string{"backend", "tool", "tier", "outcome"})
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kiln_tool_call_duration_seconds",
		Help: "Backend tool call latency, from dispatch to result, by backend and tier.", Buckets: latencyBuckets},
		[]string{"backend", "tier"})
	m.meta = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kiln_meta_tool_calls_total",
		Help: "Client requests to kiln's own tools (meta-tools) by tool and outcome (ok or error)."},
		[]string{"tool", "outcome"})
	m.metaSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kiln_meta_tool_duration_seconds",
		Help: "Latency of client requests to kiln's own tools, by tool.", Buckets: latencyBuckets},
		[]string{"tool"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kiln_backend_events_total",
		Help: "Backend supervision events: restart (a restart was scheduled after a failure) and circuit_open (health probes failed and calls now fail fast)."},
		[]string{"backend", "event"})
	m.sandboxRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kiln_sandbox_runs_total",
		Help: "Tier-3 sandbox program runs by outcome (ok, error, timeout, memory, stalled, busy, canceled, syntax, thrown, result, internal)."},
		[]string{"outcome"})
	m.limitHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kiln_sandbox_limit_hits_total",
		Help: "Sandbox runs stopped or cut short by a limit: timeout, memory, stalled (watchdog), busy (max_concurrent and queue_wait) or max_calls (tool calls refused past the per-run cap)."},
		[]string{"limit"})
	m.searches = prometheus.NewCounter(prometheus.CounterOpts{Name: "kiln_search_requests_total",
		Help: "Tool searches (search_tools and the searches other meta-tools make)."})
	m.searchSecond = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kiln_search_duration_seconds",
		Help: "Tool search latency.", Buckets: latencyBuckets})
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "kiln_sessions_open",
		Help: "Stateful MCP client sessions open now: stdio, legacy SSE and streamable HTTP before protocol 2026-07-28 (which is stateless and opens none)."})
	m.reg.MustRegister(m.calls, m.callSeconds, m.meta, m.metaSeconds, m.events, m.sandboxRuns, m.limitHits,
		m.searches, m.searchSecond, m.sessions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, l := range []string{"timeout", "memory", "stalled", "busy", "max_calls"} {
		m.limitHits.WithLabelValues(l) // present at zero, so rate() works from the first hit
	}
	if opts.Status != nil {
		m.reg.MustRegister(&stateCollector{src: opts.Status})
	}
	if opts.Counter != nil {
		m.reg.MustRegister(&outputCollector{c: opts.Counter})
	}
	return m
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// labels bounds a backend and tool to names known at start.
func (m *Metrics) labels(backend, tool string) (string, string) {
	tools, ok := m.known[backend]
	if !ok {
		return other, other
	}
	if !tools[tool] {
		return backend, other
	}
	return backend, tool
}

// ToolCall records one backend call.
func (m *Metrics) ToolCall(backend, tool, tier, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	b, t := m.labels(backend, tool)
	m.calls.WithLabelValues(b, t, tier, outcome).Inc()
	m.callSeconds.WithLabelValues(b, tier).Observe(d.Seconds())
}

// MetaTool records one client request to a meta-tool.
func (m *Metrics) MetaTool(tool string, isError bool, d time.Duration) {
	if m == nil {
		return
	}
	outcome := "ok"
	if isError {
		outcome = "error"
	}
	m.meta.WithLabelValues(tool, outcome).Inc()
	m.metaSeconds.WithLabelValues(tool).Observe(d.Seconds())
}

// BackendEvent counts a supervision event; dispatch.Options.OnEvent takes
// it.
func (m *Metrics) BackendEvent(backend, event string) {
	if m == nil {
		return
	}
	b, _ := m.labels(backend, "")
	m.events.WithLabelValues(b, event).Inc()
}

// Sessions moves the open-session gauge by delta.
func (m *Metrics) Sessions(delta int) {
	if m == nil {
		return
	}
	m.sessions.Add(float64(delta))
}

// Search records one tool search.
func (m *Metrics) Search(d time.Duration) {
	if m == nil {
		return
	}
	m.searches.Inc()
	m.searchSecond.Observe(d.Seconds())
}

// SandboxRun records one sandbox run; limit is "" unless a limit stopped
// it.
func (m *Metrics) SandboxRun(outcome, limit string) {
	if m == nil {
		return
	}
	m.sandboxRuns.WithLabelValues(outcome).Inc()
	if limit != "" {
		m.limitHits.WithLabelValues(limit).Inc()
	}
}

// LimitHit records a limit that cut a run short without ending it.
func (m *Metrics) LimitHit(limit string) {
	if m == nil {
		return
	}
	m.limitHits.WithLabelValues(limit).Inc()
}

// stateCollector reads backend states at scrape time, so the gauge is never
// stale and dispatch needs no hook for it.
type stateCollector struct{ src StatusSource }

var (
	stateDesc = prometheus.NewDesc("kiln_backend_state",
		"1 for the state each backend is in now (starting, healthy, unhealthy, stopped, disabled), 0 for the others.",
		[]string{"backend", "state"}, nil)
	inFlightDesc = prometheus.NewDesc("kiln_backend_calls_in_flight",
		"Calls running on each backend now.", []string{"backend"}, nil)
	states = []dispatch.State{dispatch.StateStarting, dispatch.StateHealthy, dispatch.StateUnhealthy, dispatch.StateStopped, dispatch.StateDisabled}
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateDesc
	ch <- inFlightDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.src.Status() {
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, st.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(st.InFlight), st.Name)
	}
}

// outputCollector exposes the output pipeline's byte counts (the same
// totals kiln://stats shows).
type outputCollector struct{ c *pipeline.Counter }

var (
	outputDesc = prometheus.NewDesc("kiln_output_bytes_total",
		"Text bytes of call_tool_chain results by stage: processed (what backends and programs returned), returned (what reached the model) and saved (the difference).",
		[]string{"kind"}, nil)
	outputCallsDesc = prometheus.NewDesc("kiln_output_results_total",
		"Results that went through the output pipeline.", nil, nil)
)

func (c *outputCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outputDesc
	ch <- outputCallsDesc
}

func (c *outputCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.c.Snapshot()
	ch <- prometheus.MustNewConstMetric(outputDesc, prometheus.CounterValue, float64(s.BytesProcessed), "processed")
	ch <- prometheus.MustNewConstMetric(outputDesc, prometheus.CounterValue, float64(s.BytesReturned), "returned")
	ch <- prometheus.MustNewConstMetric(outputDesc, prometheus.CounterValue, float64(s.BytesSaved), "saved")
	ch <- prometheus.MustNewConstMetric(outputCallsDesc, prometheus.CounterValue, float64(s.Calls))
}

// tierLabel renders a tier number as a label value; 0 means the call did
// not come through call_tool_chain (an exposed tool in direct or hybrid
// mode).
func tierLabel(tier int) string {
	if tier == 0 {
		return "direct"
	}
	return strconv.Itoa(tier)
}
