package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
)

// fakeStatus stands in for the dispatcher's view of backends.
type fakeStatus struct {
	st     []dispatch.Status
	recent []dispatch.CallRecord
}

func (f *fakeStatus) Status() []dispatch.Status { return slices.Clone(f.st) }

func (f *fakeStatus) Recent(n int) []dispatch.CallRecord { return f.recent[:min(n, len(f.recent))] }

// t0 is a fixed instant so that the views' timestamps are exact.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const longDescription = "Reads a file. Returns its text in full, decoding UTF-8, and fails when the path is outside the allowed roots or the file is larger than the configured limit."

// fleet is a gateway with a backend in every situation kiln reports on.
func fleetRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg := registry.New()
	obj := json.RawMessage(`{"type":"object"}`)
	pathSchema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path"}},"required":["path"]}`)
	for _, b := range []struct {
		compiled bool
		m        manifest.Manifest
	}{
		{true, manifest.Manifest{Backend: "everything", Tools: []manifest.Tool{
			{Name: "get-sum", Description: "Returns the sum of two numbers. Handles floats too.", InputSchema: json.RawMessage(schemaAB)},
			{Name: "echo", Description: "Echoes the message back.", InputSchema: obj},
		}}},
		{true, manifest.Manifest{Backend: "files", Tools: []manifest.Tool{
			{Name: "read_file", Description: longDescription, InputSchema: pathSchema},
			{Name: "write_file", Description: "Writes a file.", InputSchema: pathSchema},
			{Name: "get-sum", Description: "Sums file sizes.", InputSchema: obj},
		}}},
		{true, manifest.Manifest{Backend: "crashy", Tools: []manifest.Tool{{Name: "boom", Description: "Crashes.", InputSchema: obj}}}},
		{true, manifest.Manifest{Backend: "legacy", Tools: []manifest.Tool{{Name: "old", Description: "Old tool.", InputSchema: obj}}}},
		{false, manifest.Manifest{Backend: "dyn", Tools: []manifest.Tool{{Name: "say hi", Description: "Says hi.", InputSchema: obj}}}},
	} {
		m := b.m
		m.Version = 1
		if err := reg.Add(&m, b.compiled); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func fleetStatus() *fakeStatus {
	f := &fakeStatus{st: []dispatch.Status{
		{Name: "crashy", Transport: "stdio", State: dispatch.StateUnhealthy, Since: t0, Restarts: 5, GaveUp: true,
			Error: "restarted 5 times within 1m0s and failed again, so kiln stopped restarting it; last failure: exit status 2\nFix the backend"},
		{Name: "dyn", Transport: "http", State: dispatch.StateHealthy, Since: t0, Dynamic: true, MaxConcurrent: 100},
		{Name: "everything", Transport: "stdio", State: dispatch.StateHealthy, Since: t0, LastHealthy: t0.Add(time.Minute),
			Calls: 12, Errors: 2, InFlight: 1, MaxConcurrent: 10, Timeout: 30 * time.Second, ProtocolVersion: "2025-06-18"},
		{Name: "files", Transport: "stdio", State: dispatch.StateUnhealthy, Since: t0, NextRetry: t0.Add(time.Hour), ProbeFailures: 3,
			Error: "health probe failed 3 times: context deadline exceeded\nstderr: panic", StderrTail: "boot ok\npanic: disk gone\n", MaxConcurrent: 10},
		{Name: "ghost", Transport: "http", State: dispatch.StateHealthy, Listing: true, Since: t0},
		{Name: "off", Transport: "stdio", State: dispatch.StateDisabled, Since: t0},
	}}
	for i := range 30 {
		f.recent = append(f.recent, dispatch.CallRecord{Time: t0.Add(-time.Duration(i) * time.Second), Backend: "everything", Tool: "echo",
			Duration: 12345 * time.Microsecond, Outcome: []string{"ok", "ok", "timeout"}[i%3]})
	}
	return f
}

func fleetDrifts() map[string]catalog.Drift {
	return map[string]catalog.Drift{"files": {Since: t0, Added: []string{"write_file"}, Mode: config.DriftWarn}}
}

type fleetOptions struct {
	status StatusSource
	drifts func() map[string]catalog.Drift
	config *config.Config
	shared func() error
}

// newFleet serves the fleet registry over an in-process client and returns
// the client and what the server declared at initialization.
func newFleet(t *testing.T, o fleetOptions) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	reg := fleetRegistry(t)
	var docs []search.Doc
	for _, tool := range reg.Tools() {
		docs = append(docs, search.NewDoc(tool.Backend, tool.Name, tool.Title, tool.Description, tool.InputSchema))
	}
	cfg := o.config
	if cfg == nil {
		cfg = &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}
	}
	var backends []bridge.Backend
	for _, b := range reg.Backends() {
		backends = append(backends, bridge.Backend{Name: b.Name(), Tools: b.Manifest.Tools})
	}
	cat := &fixedCatalog{view: &catalog.View{Search: catalog.Lexical(search.Build(docs)), Table: bridge.Lookup(backends), Bridge: backends},
		drifts: o.drifts, cfg: cfg}
	s := New(Options{
		Version: "test", Config: cfg, Registry: reg, Catalog: cat,
		Chain:  chain.New(chain.Options{Caller: fakeCaller{}, Registry: reg, Catalog: cat}),
		Status: o.status, Counter: &pipeline.Counter{}, SharedState: o.shared,
	})
	c, err := client.NewInProcessClient(s.mcp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(t.Context(), mcp.InitializeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, init
}

func fleet(t *testing.T) *client.Client {
	t.Helper()
	c, _ := newFleet(t, fleetOptions{status: fleetStatus(), drifts: fleetDrifts})
	return c
}

// expectResource reads uri and checks its MIME type and text, or that it
// fails with an error containing every string of contains.
func expectResource(t *testing.T, c *client.Client, uri, mime string, wantErr bool, contains, excludes []string) string {
	t.Helper()
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	var text string
	switch {
	case wantErr && err == nil:
		t.Fatalf("%s: no error, want one containing %q", uri, contains)
	case wantErr:
		text = err.Error()
	case err != nil:
		t.Fatalf("%s: %v", uri, err)
	default:
		tc := res.Contents[0].(mcp.TextResourceContents)
		if tc.MIMEType != mime || tc.URI != uri {
			t.Errorf("%s: served as %s at %s, want %s", uri, tc.MIMEType, tc.URI, mime)
		}
		text = tc.Text
	}
	for _, w := range contains {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", uri, w, text)
		}
	}
	for _, w := range excludes {
		if strings.Contains(text, w) {
			t.Errorf("%s contains %q:\n%s", uri, w, text)
		}
	}
	return text
}

func readJSON[T any](t *testing.T, c *client.Client, uri string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(expectResource(t, c, uri, mimeJSON, false, nil, nil)), &v); err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return v
}

func TestResourceAndTemplateLists(t *testing.T) {
	c := fleet(t)
	res, err := c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Resources {
		got[r.URI] = r.MIMEType
	}
	want := map[string]string{
		"kiln://overview": mimeMarkdown, "kiln://backends": mimeJSON, "kiln://tools": mimeJSON, "kiln://recent": mimeJSON,
		"kiln://stats": mimeJSON, "kiln://health": mimeJSON, "kiln://llms": mimeText, "kiln://llms-full": mimeMarkdown,
		"kiln://call_tool_chain": mimeMarkdown,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("resources (-want +got):\n%s", d)
	}
	tres, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, r := range tres.ResourceTemplates {
		templates = append(templates, r.URITemplate.Raw())
	}
	slices.Sort(templates)
	wantT := []string{"kiln://backend/{backend_name}", "kiln://backend/{backend_name}/tools", "kiln://recent/{limit}", "kiln://tool/{tool_name}"}
	if d := cmp.Diff(wantT, templates); d != "" {
		t.Errorf("templates (-want +got):\n%s", d)
	}
}

func TestBackendsView(t *testing.T) {
	got := readJSON[[]backendView](t, fleet(t), "kiln://backends")
	since := "2030-01-02T03:04:05Z"
	want := []backendView{
		{Name: "crashy", Transport: "stdio", State: "unhealthy", Since: since, Compiled: true, Tools: 1, Restarts: 5, GaveUp: true,
			Error: "restarted 5 times within 1m0s and failed again, so kiln stopped restarting it; last failure: exit status 2\nFix the backend"},
		{Name: "dyn", Transport: "http", State: "healthy", Since: since, Dynamic: true, Tools: 1, MaxConcurrent: 100},
		{Name: "everything", Transport: "stdio", State: "healthy", Since: since, Compiled: true, Tools: 2, ProtocolVersion: "2025-06-18",
			LastHealthy: "2030-01-02T03:05:05Z", Calls: 12, Errors: 2, InFlight: 1, MaxConcurrent: 10, Timeout: "30s"},
		{Name: "files", Transport: "stdio", State: "unhealthy", Since: since, Compiled: true, Tools: 3,
			Error: "health probe failed 3 times: context deadline exceeded\nstderr: panic", NextRetry: "2030-01-02T04:04:05Z", ProbeFailures: 3,
			MaxConcurrent: 10, Drift: &driftView{Since: since, Summary: "added write_file", Mode: "warn", Served: "live",
				Accept: "review with `kiln-gen diff`, record and compile it in with `make generate`"}},
		{Name: "legacy", State: "not configured", Compiled: true, Tools: 1,
			Note: "compiled in but not declared in the config, so calls fail; add it under backends: to use it"},
		{Name: "ghost", Transport: "http", State: "healthy", Listing: true, Since: since,
			Note: "declared in the config but not compiled in, so kiln has no tools for it: run make generate && make build"},
		{Name: "off", Transport: "stdio", State: "disabled", Since: since,
			Note: "declared in the config but not compiled in, so kiln has no tools for it: run make generate && make build"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(backendView{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".status"
	}, cmp.Ignore())); d != "" {
		t.Errorf("kiln://backends (-want +got):\n%s", d)
	}
}

func TestResourceContents(t *testing.T) {
	c := fleet(t)
	tests := []struct {
		uri                string
		mime               string
		wantErr            bool
		contains, excludes []string
	}{
		{"kiln://overview", mimeMarkdown, false, []string{
			"# kiln\n", "Backends: 7 (3 healthy, 2 unhealthy, 1 disabled, 1 not configured)", "- Tools: 8\n",
			"Health: degraded: 3 of 5 backends healthy; unhealthy: crashy, files.",
			"Registered at run time: dyn", "served from the live list): files", "search_tools {\"task_description\"",
			"register_manual and deregister_manual are turned off", "kiln://call_tool_chain", "kiln://health"}, nil},
		{"kiln://backend/files", mimeJSON, false, []string{
			`"stderr_tail": [`, `"boot ok",`, `"panic: disk gone"`, `"files.read_file"`, `"files.write_file"`,
			"Calls to files fail fast until kiln retries at 2030-01-02T04:04:05Z", `"summary": "added write_file"`, "kiln://backend/files/tools"},
			[]string{"everything.echo"}},
		{"kiln://backend/crashy", mimeJSON, false, []string{"stopped restarting crashy after 5 restarts", `"gave_up": true`}, []string{"stderr_tail"}},
		{"kiln://backend/everything", mimeJSON, false, []string{`"tools": [`, `"everything.echo"`, `"calls": 12`}, []string{"advice"}},
		{"kiln://backend/evrything", "", true, []string{`no backend named "evrything"; known backends: everything, crashy, dyn,`, "kiln://backends"}, nil},
		{"kiln://backend/files/tools", mimeJSON, false, []string{
			`"tool": "files.read_file"`, `"description": "Reads a file."`, `"signature": "{path: string}"`,
			`"example": "files.read_file({path: \"…\"})"`, `"state": "unhealthy"`},
			[]string{"Returns its text", "everything."}},
		{"kiln://backend/nope/tools", "", true, []string{`no backend named "nope"`}, nil},
		{"kiln://tool/read_file", mimeJSON, false, []string{
			`"tool": "files.read_file"`, "allowed roots", `"input_schema"`, `"signature": "{path: string}"`, `"backend_state": "unhealthy"`,
			`"name": "path"`}, nil},
		{"kiln://tool/everything.get-sum", mimeJSON, false, []string{`"example": "everything.get_sum({a: 1})"`, "Handles floats too."}, nil},
		{"kiln://tool/dyn.say%20hi", mimeJSON, false, []string{`"tool": "dyn.say hi"`}, nil},
		{"kiln://tool/get-sum", "", true, []string{"ambiguous", "everything.get-sum, files.get-sum"}, nil},
		{"kiln://tool/everything.get-summ", "", true, []string{"did you mean everything.get-sum"}, nil},
		{"kiln://recent/abc", "", true, []string{`limit must be a whole number from 1 to 200, got "abc"`, "kiln://recent for the last 20"}, nil},
		{"kiln://recent/0", "", true, []string{`got "0"`}, nil},
		{"kiln://recent/201", "", true, []string{`got "201"`}, nil},
		{"kiln://recent/", "", true, []string{`got ""`}, nil},
		{"kiln://llms", mimeText, false, []string{
			"# kiln\n\n> MCP gateway serving 8 tools from 7 backends",
			"\n## files (unhealthy, 3 tools; call as files.<tool>)\nget-sum, read_file, write_file\n",
			"\n## ghost (healthy, 0 tools; call as ghost.<tool>)\n\n## off", "\n## crashy (unhealthy, 1 tool; call as crashy.<tool>)\nboom\n"}, []string{"Reads a file"}},
		{"kiln://llms-full", mimeMarkdown, false, []string{
			"\n### files.read_file\n\n`files.read_file({path: string})`\n\n" + longDescription + "\n",
			"\n### everything.get-sum\n\n`everything.get_sum({a: number, b?: number})`\n",
			"\n## ghost (healthy)\n\nNo tools.\n"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			expectResource(t, c, tc.uri, tc.mime, tc.wantErr, tc.contains, tc.excludes)
		})
	}
}

func TestToolsIndex(t *testing.T) {
	got := readJSON[toolsIndex](t, fleet(t), "kiln://tools")
	want := map[string]map[string]string{
		"crashy":     {"crashy.boom": "Crashes."},
		"dyn":        {"dyn.say hi": "Says hi."},
		"everything": {"everything.echo": "Echoes the message back.", "everything.get-sum": "Returns the sum of two numbers."},
		"files":      {"files.get-sum": "Sums file sizes.", "files.read_file": "Reads a file.", "files.write_file": "Writes a file."},
		"legacy":     {"legacy.old": "Old tool."},
	}
	if d := cmp.Diff(want, got.Backends); d != "" || got.Total != 8 {
		t.Errorf("kiln://tools total %d, want 8; backends (-want +got):\n%s", got.Total, d)
	}
}

func TestRecentCalls(t *testing.T) {
	type recent struct {
		Calls    []callView     `json:"calls"`
		Outcomes map[string]int `json:"outcomes"`
	}
	c := fleet(t)
	for _, tc := range []struct {
		uri          string
		n            int
		ok, timeouts int
	}{
		{"kiln://recent", 20, 14, 6},
		{"kiln://recent/5", 5, 4, 1},
		{"kiln://recent/200", 30, 20, 10},
	} {
		got := readJSON[recent](t, c, tc.uri)
		if len(got.Calls) != tc.n {
			t.Fatalf("%s: %d calls, want %d", tc.uri, len(got.Calls), tc.n)
		}
		if d := cmp.Diff(map[string]int{"ok": tc.ok, "timeout": tc.timeouts}, got.Outcomes); d != "" {
			t.Errorf("%s outcomes (-want +got):\n%s", tc.uri, d)
		}
		want := callView{Time: "2030-01-02T03:04:03.000Z", Tool: "everything.echo", DurationMS: 12.3, Outcome: "timeout"}
		if d := cmp.Diff(want, got.Calls[2]); d != "" {
			t.Errorf("%s third call (-want +got):\n%s", tc.uri, d)
		}
	}
	// Without a dispatcher there is nothing to show, but the shape holds.
	expectResource(t, newTestServer(t), "kiln://recent", mimeJSON, false, []string{`"calls": []`}, nil)
}

func TestStatsCountsCallsPerBackend(t *testing.T) {
	type stats struct {
		Tools    int                      `json:"tools"`
		Backends map[string]backendCounts `json:"backends"`
		Output   *pipeline.Snapshot       `json:"call_tool_chain_output"`
	}
	got := readJSON[stats](t, fleet(t), "kiln://stats")
	if got.Tools != 8 || got.Output == nil || len(got.Backends) != 6 {
		t.Errorf("kiln://stats = %+v", got)
	}
	if d := cmp.Diff(backendCounts{Calls: 12, Errors: 2, InFlight: 1}, got.Backends["everything"]); d != "" {
		t.Errorf("everything's counts (-want +got):\n%s", d)
	}
}

func TestHealth(t *testing.T) {
	c := fleet(t)
	h := readJSON[healthView](t, c, "kiln://health")
	if h.Status != healthDegraded || h.Summary != "degraded: 3 of 5 backends healthy; unhealthy: crashy, files" {
		t.Errorf("verdict %q, summary %q", h.Status, h.Summary)
	}
	if d := cmp.Diff([]string{"legacy (not configured)", "off (disabled)"}, h.Inactive); d != "" {
		t.Errorf("inactive (-want +got):\n%s", d)
	}
	if len(h.Problems) != 2 {
		t.Fatalf("problems: %+v", h.Problems)
	}
	crashy, files := h.Problems[0], h.Problems[1]
	if crashy.Backend != "crashy" || crashy.NextRetry != "" || !strings.Contains(crashy.Advice, "stopped restarting crashy after 5 restarts") ||
		crashy.Reason != "restarted 5 times within 1m0s and failed again, so kiln stopped restarting it; last failure: exit status 2" {
		t.Errorf("crashy: %+v", crashy)
	}
	if files.Backend != "files" || files.Reason != "health probe failed 3 times: context deadline exceeded" ||
		!strings.HasPrefix(files.NextRetry, "2030-01-02T04:04:05Z (in ") || !strings.Contains(files.Advice, "kiln://backend/files") {
		t.Errorf("files: %+v", files)
	}
}

func TestHealthVerdicts(t *testing.T) {
	st := func(name string, s dispatch.State) dispatch.Status {
		return dispatch.Status{Name: name, State: s, Since: t0}
	}
	tests := []struct {
		name     string
		statuses []dispatch.Status
		status   string
		summary  string
	}{
		{"all healthy", []dispatch.Status{st("everything", dispatch.StateHealthy), st("files", dispatch.StateHealthy)},
			healthOK, "ok: 2 of 2 backends healthy"},
		{"one starting", []dispatch.Status{st("everything", dispatch.StateHealthy), st("files", dispatch.StateStarting)},
			healthDegraded, "degraded: 1 of 2 backends healthy; starting: files"},
		{"none healthy", []dispatch.Status{st("everything", dispatch.StateStopped), st("files", dispatch.StateUnhealthy)},
			healthDown, "down: 0 of 2 backends healthy; unhealthy: files; stopped: everything"},
		{"all disabled", []dispatch.Status{st("everything", dispatch.StateDisabled)},
			healthDown, "down: no backend is configured and enabled, so no tool can be called"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFleet(t, fleetOptions{status: &fakeStatus{st: tc.statuses}})
			h := readJSON[healthView](t, c, "kiln://health")
			if h.Status != tc.status || h.Summary != tc.summary {
				t.Errorf("got %q %q, want %q %q", h.Status, h.Summary, tc.status, tc.summary)
			}
		})
	}
}

// An unreachable shared state (gateway.state_url) turns an ok verdict
// degraded and says what still works.
func TestHealthSharedStateDown(t *testing.T) {
	healthy := &fakeStatus{st: []dispatch.Status{{Name: "everything", State: dispatch.StateHealthy, Since: t0}}}
	c, _ := newFleet(t, fleetOptions{status: healthy, shared: func() error { return errors.New("redis at 127.0.0.1:6379: connection refused") }})
	h := readJSON[healthView](t, c, "kiln://health")
	if h.Status != healthDegraded || h.Summary != "degraded: 1 of 1 backends healthy; shared state unreachable" {
		t.Errorf("got %q %q", h.Status, h.Summary)
	}
	if len(h.Problems) != 1 || h.Problems[0].Backend != "(shared state)" || !strings.Contains(h.Problems[0].Advice, "tool calls still work") {
		t.Errorf("problems: %+v", h.Problems)
	}
	c, _ = newFleet(t, fleetOptions{status: healthy, shared: func() error { return nil }})
	if h := readJSON[healthView](t, c, "kiln://health"); h.Status != healthOK || len(h.Problems) != 0 {
		t.Errorf("with shared state up: %q %+v", h.Status, h.Problems)
	}
}

func TestCallToolChainGuideStatesConfiguredLimits(t *testing.T) {
	custom := config.DefaultGateway()
	custom.Sandbox = config.Sandbox{Timeout: 10 * time.Second, MaxCalls: 7, MemoryBytes: 64 << 20, MaxConcurrent: 3}
	custom.MaxOutputSize = 9000
	noIntent := config.DefaultGateway()
	noIntent.Output.IntentFilter = false
	tests := []struct {
		name               string
		gateway            config.Gateway
		contains, excludes []string
	}{
		{"defaults", config.DefaultGateway(), []string{
			"- Time: 30s for the whole run unless you pass `timeout` (milliseconds); at most 5m0s.",
			"- Memory: 50 MiB", "- Tool calls: 50 per run", "- Concurrency: 8 programs at a time; a program waits up to 2s",
			"(default 200000)", "outputs over 5000 bytes keep only the sections that mention it", "JSON over 10240 bytes", "Text over 40000 bytes",
		}, []string{"turned off"}},
		{"configured", custom, []string{
			"- Time: 10s", "at most 5m0s", "- Memory: 64 MiB", "- Tool calls: 7 per run", "- Concurrency: 3 programs", "(default 9000)",
		}, []string{"50 MiB", "30s for"}},
		{"intent filter off", noIntent, []string{"The intent filter is turned off in this kiln, so `intent` has no effect."},
			[]string{"keep only the sections"}},
	}
	common := []string{
		"## 1. A JSON call\n\n    {\"tool\": \"crashy.boom\", \"arguments\": {...}}",
		"## 2. One TypeScript call\n\n    const r = await crashy.boom({}); return r;",
		"Promise.all", "[console output]", "export a `main` function", "Object.keys(__interfaces)", "__getToolInterface(\"backend.tool\")",
		"kiln://health", "max_output_size", "`intent`",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFleet(t, fleetOptions{config: &config.Config{Path: "kiln.yaml", Gateway: tc.gateway}})
			expectResource(t, c, "kiln://call_tool_chain", mimeMarkdown, false, append(tc.contains, common...), tc.excludes)
		})
	}
}

// The guide's examples are real: the JSON and TypeScript calls it shows for
// the first tool, and its introspection forms, run through call_tool_chain
// as written, without a sandbox.
func TestCallToolChainGuideExamplesRun(t *testing.T) {
	c := fleet(t)
	tests := []struct{ code, want string }{
		{`{"tool": "crashy.boom", "arguments": {}}`, "crashy.boom got {}"},
		{`const r = await crashy.boom({}); return r;`, "crashy.boom got {}"},
		{`return Object.keys(__interfaces);`, `"everything"`},
		{`return __getToolInterface("files.read_file");`, `"input_schema"`},
	}
	for _, tc := range tests {
		expectText(t, c, "call_tool_chain", map[string]any{"code": tc.code}, false, []string{tc.want}, nil)
	}
}

func TestCompletion(t *testing.T) {
	c, init := newFleet(t, fleetOptions{status: fleetStatus()})
	if init.Capabilities.Completions == nil || init.Capabilities.Prompts == nil {
		t.Fatalf("capabilities: completions %v, prompts %v", init.Capabilities.Completions, init.Capabilities.Prompts)
	}
	res := func(uri string) any { return mcp.ResourceReference{Type: "ref/resource", URI: uri} }
	prompt := func(name string) any { return mcp.PromptReference{Type: "ref/prompt", Name: name} }
	tests := []struct {
		ref       any
		arg, val  string
		want      []string
		wantTotal int
	}{
		{res(uriBackend), "backend_name", "f", []string{"files", "off"}, 2},
		{res(uriBackend), "backend_name", "E", []string{"everything", "files", "legacy"}, 3},
		{res(uriBackend), "backend_name", "", []string{"crashy", "dyn", "everything", "files", "legacy", "ghost", "off"}, 7},
		{res(uriBackendTools), "backend_name", "dy", []string{"dyn"}, 1},
		{res(uriTool), "tool_name", "read", []string{"files.read_file"}, 1},
		{res(uriTool), "tool_name", "get", []string{"everything.get-sum", "files.get-sum"}, 2},
		{res(uriTool), "tool_name", "files.", []string{"files.get-sum", "files.read_file", "files.write_file"}, 3},
		{res(uriRecentN), "limit", "1", []string{"10", "100"}, 2},
		{res(uriStats), "backend_name", "f", []string{}, 0},
		{prompt(promptStatus), "backend_name", "cr", []string{"crashy"}, 1},
		{prompt(promptDiscover), "topic", "gh", []string{"ghost"}, 1},
		{prompt(promptFindTool), "task", "read", []string{}, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v %s=%q", tc.ref, tc.arg, tc.val), func(t *testing.T) {
			got, err := c.Complete(t.Context(), mcp.CompleteRequest{Params: mcp.CompleteParams{
				Ref: tc.ref, Argument: mcp.CompleteArgument{Name: tc.arg, Value: tc.val}}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got.Completion.Values); d != "" || got.Completion.Total != tc.wantTotal {
				t.Errorf("total %d, want %d; values (-want +got):\n%s", got.Completion.Total, tc.wantTotal, d)
			}
		})
	}
}

func TestCompleteCapsAtTheProtocolLimit(t *testing.T) {
	var many []string
	for i := range 150 {
		many = append(many, fmt.Sprintf("b%03d", i))
	}
	got := complete("b", many, nil)
	if len(got.Values) != maxCompletions || got.Total != 150 || !got.HasMore || got.Values[0] != "b000" {
		t.Errorf("complete over 150 candidates: %d values, total %d, hasMore %v, first %q", len(got.Values), got.Total, got.HasMore, got.Values[0])
	}
}
