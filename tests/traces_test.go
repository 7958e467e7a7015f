//go:build e2e

package tests

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a real OTLP/HTTP endpoint: it decodes the protobuf
// ExportTraceServiceRequest messages kiln's exporter POSTs to /v1/traces,
// as a collector's otlphttp receiver does, and keeps the spans.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []span
	services map[string]bool
}

type span struct {
	name, trace, id, parent string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/v1/logs" {
		// Kiln's audit records, which an OTLP endpoint turns on too;
		// TestAuditOTelLogs reads them.
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusUnsupportedMediaType)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if !readOTLP(w, req, &msg) {
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				r.services[a.GetValue().GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId)})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *otlpReceiver) snapshot() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

// seen is what the HTTP backend received with each tools/call.
type seen struct {
	header, meta string // traceparent in the HTTP header and in params._meta
}

// startTracedBackend runs the fault server over streamable HTTP behind a
// reverse proxy that records the trace context of each tools/call.
func startTracedBackend(t *testing.T) (string, func() []seen) {
	t.Helper()
	target, err := url.Parse(startFaultHTTPServer(t, "--stateless"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []seen
	// The proxy adds the path of each request to the target's, so it gets
	// the server's root.
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
	}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var msg struct {
			Method string
			Params struct {
				Meta map[string]any `json:"_meta"`
			}
		}
		if json.Unmarshal(raw, &msg) == nil && msg.Method == "tools/call" {
			tp, _ := msg.Params.Meta["traceparent"].(string)
			mu.Lock()
			calls = append(calls, seen{header: r.Header.Get("Traceparent"), meta: tp})
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL + target.Path, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), calls...)
	}
}

// TestTracesOTLP checks the span tree kiln exports over OTLP/HTTP (meta-tool
// → tier → backend call, with a tier-3 program's calls under its tier), that
// it continues the trace a client sent in _meta, and that each backend call
// carries its span's W3C trace context in the HTTP header and in _meta.
func TestTracesOTLP(t *testing.T) {
	recv := &otlpReceiver{services: map[string]bool{}}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close)
	backendURL, backendSaw := startTracedBackend(t)
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  metrics_addr: 127.0.0.1:0
  expose: hybrid
  pin: [web.echo]
backends:
  web:
    transport: http
    url: %s
    required: true
`, t.TempDir(), backendURL)
	k := startOpsKiln(t, cfg, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=kiln-e2e")
	waitReady(t, k.metrics)

	c, err := mcpclient.NewStreamableHttpClient(k.mcp + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	startMCPGo(t, c)
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	call := func(code string, meta map[string]any) {
		t.Helper()
		req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": code}}}
		if meta != nil {
			req.Params.Meta = &mcpgo.Meta{AdditionalFields: meta}
		}
		res, err := c.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("call_tool_chain %s: %v %+v", code, err, res)
		}
	}
	call(`{"tool": "web.echo", "arguments": {"text": "one"}}`, map[string]any{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"})
	call(`const a = await web.echo({text: "x"}); const b = await web.echo({text: "y"}); return a + b;`, nil)
	// The pinned tool called by its exposed name roots a trace of its own,
	// continuing the client's like a meta-tool's.
	const directTrace, directSpan = "5cf92f3577b34da6a3ce929d0e0e4737", "01f067aa0ba902b8"
	direct := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "web__echo", Arguments: map[string]any{"text": "z"},
		Meta: &mcpgo.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + directTrace + "-" + directSpan + "-01"}}}}
	if res, err := c.CallTool(t.Context(), direct); err != nil || res.IsError {
		t.Fatalf("web__echo: %v %+v", err, res)
	}

	var spans []span
	eventually(t, "kiln exports 2 meta-tool spans, 1 direct tool span and 4 backend call spans", func() bool {
		spans = recv.snapshot()
		n := map[string]int{}
		for _, s := range spans {
			n[s.name]++
		}
		return n["call_tool_chain"] == 2 && n["web__echo"] == 1 && n["web.echo"] == 4
	})
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	// path walks from a span to its trace's root, by name.
	path := func(s span) string {
		names := []string{s.name}
		for p, ok := byID[s.parent]; ok; p, ok = byID[p.parent] {
			names = append([]string{p.name}, names...)
		}
		return strings.Join(names, " > ")
	}
	var paths []string
	for _, s := range spans {
		if s.name == "web.echo" && s.trace != directTrace {
			paths = append(paths, path(s))
		}
	}
	want := map[string]int{"call_tool_chain > tier 1 > web.echo": 1, "call_tool_chain > tier 3 > web.echo": 2}
	got := map[string]int{}
	for _, p := range paths {
		got[p]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backend call span paths = %v, want %v", got, want)
	}
	for _, s := range spans {
		if s.name == "call_tool_chain" && s.trace == clientTrace && s.parent != clientSpan {
			t.Errorf("the meta-tool span in the client's trace has parent %s, want the client's span %s", s.parent, clientSpan)
		}
	}
	var inClientTrace int
	for _, s := range spans {
		if s.trace == clientTrace {
			inClientTrace++
		}
	}
	if inClientTrace != 3 {
		t.Errorf("%d spans continue the client's trace %s, want 3 (meta-tool, tier 1, backend call)", inClientTrace, clientTrace)
	}
	var directPaths []string
	for _, s := range spans {
		if s.trace == directTrace {
			directPaths = append(directPaths, path(s))
			if s.name == "web__echo" && s.parent != directSpan {
				t.Errorf("the direct tool's span has parent %s, want the client's span %s", s.parent, directSpan)
			}
		}
	}
	if len(directPaths) != 2 || !slices.Contains(directPaths, "web__echo > web.echo") {
		t.Errorf("spans in the direct call's trace = %v, want web__echo and web__echo > web.echo", directPaths)
	}
	if !recv.services["kiln-e2e"] {
		t.Errorf("service.name from OTEL_SERVICE_NAME not exported; got %v", recv.services)
	}

	// Each backend call carried its own span's context, in both places.
	calls := backendSaw()
	if len(calls) != 4 {
		t.Fatalf("backend saw %d tools/call, want 4", len(calls))
	}
	for _, c := range calls {
		if c.header == "" || c.header != c.meta {
			t.Errorf("backend got traceparent header %q and _meta %q, want both set and equal", c.header, c.meta)
			continue
		}
		parts := strings.Split(c.header, "-")
		if s, ok := byID[parts[2]]; len(parts) != 4 || !ok || s.name != "web.echo" || s.trace != parts[1] {
			t.Errorf("traceparent %q does not name an exported web.echo span", c.header)
		}
	}
}

// readOTLP decodes an OTLP/HTTP request body (gzipped or not) into msg, as
// a collector's receiver does, answering 400 itself when it cannot.
func readOTLP(w http.ResponseWriter, req *http.Request, msg proto.Message) bool {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(raw, msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}
