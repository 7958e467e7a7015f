package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// richCaller stands in for the dispatcher with the result kinds a direct
// call must keep: these tests are about listing and conversion; tests/
// calls real backends through the same path.
type richCaller struct{}

const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

func (richCaller) CallTool(_ context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	switch tool {
	case "image":
		img, _ := json.Marshal(map[string]string{"type": "image", "data": tinyPNG, "mimeType": "image/png"})
		return &toolcall.Result{Content: []json.RawMessage{img}}, nil
	case "structured":
		r := toolcall.Text(`{"temperature":21}`)
		r.StructuredContent = json.RawMessage(`{"temperature":21}`)
		return r, nil
	case "fails":
		return toolcall.Errorf("the backend refused: %s", args), nil
	case "leaky":
		return toolcall.Text("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 here"), nil
	}
	return toolcall.Text(backend + "." + tool + " got " + string(args)), nil
}

var directTools = []manifest.Tool{
	{Name: "image", Description: "An image.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "structured", Title: "Weather", Description: "Structured.", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}}}`),
		Annotations:  json.RawMessage(`{"readOnlyHint":true,"title":"Weather now"}`),
		Icons:        json.RawMessage(`[{"src":"data:image/svg+xml;base64,PHN2Zy8+","mimeType":"image/svg+xml","sizes":["any"]}]`)},
	{Name: "fails", Description: "Fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "leaky", Description: "Leaks a token.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "get-sum", Description: "Sum.", InputSchema: json.RawMessage(schemaAB)},
	{Name: "tasks.only", Description: "Task only.", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: json.RawMessage(`{"taskSupport":"required"}`)},
}

type directEnv struct {
	reg *registry.Registry
	srv *Server
	c   *client.Client
	// changed receives one value per tools/list_changed notification.
	changed chan struct{}
}

func newDirectServer(t *testing.T, expose string, pins []string, backends ...config.Backend) *directEnv {
	t.Helper()
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "everything", Tools: directTools}, true); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "other", Tools: []manifest.Tool{
		{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "search_tools", Description: "Clashes with a meta-tool when bare.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}}, true); err != nil {
		t.Fatal(err)
	}
	g := config.DefaultGateway()
	g.Expose, g.Pin = expose, pins
	cfg := &config.Config{Path: "kiln.yaml", Gateway: g, Backends: backends}
	srv := New(Options{
		Version: "test", Config: cfg, Registry: reg,
		Chain:   chain.New(chain.Options{Caller: richCaller{}, Registry: reg, Scrub: scrub.New(scrub.Options{}).Result}),
		Exposed: map[string]string{"everything.get-sum": "everything__get-sum"},
	})
	env := &directEnv{reg: reg, srv: srv, changed: make(chan struct{}, 16)}
	c, err := client.NewInProcessClient(srv.mcp)
	if err != nil {
		t.Fatal(err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			env.changed <- struct{}{}
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	env.c = c
	return env
}

func (e *directEnv) names(t *testing.T) []string {
	t.Helper()
	res, err := e.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

var metaNames = []string{"call_tool_chain", "deregister_manual", "get_required_keys_for_tool", "list_tools_meta", "register_manual", "search_tools", "tool_info"}

func TestToolsListPerMode(t *testing.T) {
	direct := []string{"everything__fails", "everything__get-sum", "everything__image", "everything__leaky", "everything__structured", "other__echo", "other__search_tools"}
	for _, c := range []struct {
		name, expose string
		pins         []string
		backends     []config.Backend
		want         []string
	}{
		{"meta", config.ExposeMeta, nil, nil, metaNames},
		{"direct lists every tool but task-only ones, no meta-tools", config.ExposeDirect, nil, nil, direct},
		{"hybrid lists the pinned tools beside the meta-tools", config.ExposeHybrid, []string{"everything.get-sum", "other.*", "nobody.x"}, nil,
			append(slices.Clone(metaNames), "everything__get-sum", "other__echo", "other__search_tools")},
		{"bare backend uses its own names; a meta-tool name gets a suffix", config.ExposeHybrid, []string{"other.*"},
			[]config.Backend{{Name: "other", Bare: true, Enabled: true}},
			append(slices.Clone(metaNames), "echo", "search_tools_"+suffixOf("other.search_tools"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newDirectServer(t, c.expose, c.pins, c.backends...)
			want := slices.Sorted(slices.Values(c.want))
			if diff := cmp.Diff(want, env.names(t)); diff != "" {
				t.Errorf("tools/list (-want +got):\n%s", diff)
			}
		})
	}
}

// suffixOf is the hash suffix a bare tool gets when its name is taken.
func suffixOf(id string) string {
	backend, tool, _ := strings.Cut(id, ".")
	names, _ := registry.ExposeNames([]registry.ExposeTool{{Backend: backend, Tool: tool, Bare: true}}, func(n string) bool { return n == tool })
	return names[id][strings.LastIndexByte(names[id], '_')+1:]
}

func TestDirectToolKeepsRecordedDefinition(t *testing.T) {
	env := newDirectServer(t, config.ExposeDirect, nil)
	res, err := env.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tl mcp.Tool) bool { return tl.Name == "everything__structured" })
	if i < 0 {
		t.Fatal("everything__structured not listed")
	}
	raw, err := json.Marshal(res.Tools[i])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"title":"Weather"`, `"outputSchema":{"properties":{"temperature":{"type":"number"}}`,
		`"readOnlyHint":true`, `"title":"Weather now"`, `"icons":[{"src":"data:image/svg+xml;base64,PHN2Zy8+","mimeType":"image/svg+xml","sizes":["any"]}]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("listed definition lacks %s:\n%s", want, raw)
		}
	}
}

func TestDirectCallsKeepResultKinds(t *testing.T) {
	env := newDirectServer(t, config.ExposeDirect, nil)
	callRaw := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := env.c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := callRaw("everything__image", nil); len(res.Content) != 1 {
		t.Errorf("image: %d blocks", len(res.Content))
	} else if img, ok := res.Content[0].(mcp.ImageContent); !ok || img.Data != tinyPNG || img.MIMEType != "image/png" {
		t.Errorf("image block not kept: %#v", res.Content[0])
	}
	if res := callRaw("everything__structured", nil); res.IsError {
		t.Error("structured: isError")
	} else if raw, _ := json.Marshal(res.StructuredContent); string(raw) != `{"temperature":21}` {
		t.Errorf("structuredContent = %s", raw)
	}
	if res := callRaw("everything__fails", map[string]any{"why": "x"}); !res.IsError {
		t.Error("fails: isError lost")
	}
	if text, isErr := call(t, env.c, "everything__get-sum", map[string]any{"a": 2, "b": 3}); isErr || text != `everything.get-sum got {"a":2,"b":3}` {
		t.Errorf("get-sum: %q (isError %v)", text, isErr)
	}
	if text, _ := call(t, env.c, "everything__leaky", nil); strings.Contains(text, "ghp_abcdef") {
		t.Errorf("a token reached the client unscrubbed: %q", text)
	}
}

func TestListChangedOnRegistration(t *testing.T) {
	env := newDirectServer(t, config.ExposeDirect, nil)
	if err := env.reg.Add(&manifest.Manifest{Version: 1, Backend: "weather", Tools: []manifest.Tool{
		{Name: "forecast", Description: "Forecast.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}}, false); err != nil {
		t.Fatal(err)
	}
	env.srv.SyncTools() // what the catalog's OnChange does after a registration
	<-env.changed
	if names := env.names(t); !slices.Contains(names, "weather__forecast") {
		t.Errorf("registered tool not listed: %v", names)
	}
	if text, _ := call(t, env.c, "weather__forecast", nil); text != "weather.forecast got {}" {
		t.Errorf("call: %q", text)
	}
	env.reg.Remove("weather")
	env.srv.SyncTools()
	<-env.changed
	if names := env.names(t); slices.Contains(names, "weather__forecast") {
		t.Errorf("deregistered tool still listed: %v", names)
	}
	// An unchanged set sends nothing: the next notification must come
	// from the change below, not from this sync.
	env.srv.SyncTools()
	select {
	case <-env.changed:
		t.Fatal("list_changed sent for an unchanged tool set")
	default:
	}
}

func TestCheckExposure(t *testing.T) {
	reg := registry.New()
	for _, b := range []string{"a", "b", "c"} {
		if err := reg.Add(&manifest.Manifest{Version: 1, Backend: b, Tools: []manifest.Tool{{Name: "echo"}, {Name: b + "-only"}}}, true); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway(), Backends: []config.Backend{
		{Name: "a", Bare: true, Enabled: true}, {Name: "b", Bare: true, Enabled: true}, {Name: "c", Enabled: true}}}
	if err := CheckExposure(cfg, reg); err != nil {
		t.Errorf("meta mode: %v", err)
	}
	cfg.Gateway.Expose = config.ExposeDirect
	err := CheckExposure(cfg, reg)
	want := `kiln.yaml: backends.a.bare, backends.b.bare: bare backends a, b all publish a tool named "echo" (a.echo, b.echo); set bare: false on all but one of them`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestPinsThatMatchNothingAreNamed(t *testing.T) {
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "everything", Tools: directTools}, true); err != nil {
		t.Fatal(err)
	}
	g := config.DefaultGateway()
	g.Expose, g.Pin = config.ExposeHybrid, []string{"everything.imag", "ghost.x", "later.*", "everything.*"}
	cfg := &config.Config{Path: "kiln.yaml", Gateway: g, Backends: []config.Backend{{Name: "later", Enabled: true}}}
	var logs strings.Builder
	New(Options{Config: cfg, Registry: reg,
		Chain:  chain.New(chain.Options{Caller: richCaller{}, Registry: reg}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	out := logs.String()
	for _, want := range []string{
		`pin=everything.imag did_you_mean=everything.image`,
		`pin=ghost.x backend=ghost`,
		`not compiled in; the pin applies once it connects" pin=later.*`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `pin=everything.*`) {
		t.Errorf("a matching pin was warned about:\n%s", out)
	}
}

// TestDirectInvalidArguments uses the real dispatcher, which validates
// before it needs a connection: the error names the tool as the client
// called it, not the meta-tools direct mode does not list.
func TestDirectInvalidArguments(t *testing.T) {
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "everything", Tools: directTools}, true); err != nil {
		t.Fatal(err)
	}
	g := config.DefaultGateway()
	g.Expose = config.ExposeDirect
	cfg := &config.Config{Path: "kiln.yaml", Gateway: g, Backends: []config.Backend{{Name: "everything", Transport: config.TransportStdio, Command: "true", Enabled: true}}}
	disp := dispatch.New(reg, cfg, dispatch.Options{})
	srv := New(Options{Config: cfg, Registry: reg, Chain: chain.New(chain.Options{Caller: disp, Registry: reg})})
	c, err := client.NewInProcessClient(srv.mcp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	text, isErr := call(t, c, "everything__get-sum", map[string]any{"a": "two"})
	if !isErr || !strings.HasPrefix(text, "everything__get-sum: invalid arguments: ") || !strings.Contains(text, "/a") ||
		!strings.Contains(text, "Expected arguments: ") || strings.Contains(text, "tool_info") {
		t.Errorf("isError=%v text=%q", isErr, text)
	}
}

// countingCaller counts backend calls; a test double standing for the
// dispatcher, whose real behaviour is not under test here.
type countingCaller struct{ n atomic.Int32 }

func (c *countingCaller) CallTool(_ context.Context, backend, tool string, _ json.RawMessage) (*toolcall.Result, error) {
	c.n.Add(1)
	return toolcall.Text("ran " + backend + "." + tool), nil
}

// TestStaleKilnRequestStateIsRefused: a 2026-07-28 retry carrying a
// requestState kiln issued, but which expired or lives on another replica,
// is answered "no run waiting" and does not run the tool again; a state
// that is not kiln's goes to the backend as its own.
func TestStaleKilnRequestStateIsRefused(t *testing.T) {
	env := newDirectServer(t, config.ExposeDirect, nil)
	cc := &countingCaller{}
	env.srv.opts.Chain = chain.New(chain.Options{Caller: cc, Registry: env.reg, Scrub: scrub.New(scrub.Options{}).Result})
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}})
	call := func(state string) string {
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__image"}}
		req.Params.RequestState = state
		req.Params.RawArguments = json.RawMessage(`{}`)
		res, err := env.srv.directHandler("everything__image", "everything", "image")(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	if got := call(exchangePrefix + "0123456789abcdef0123456789abcdef"); !strings.Contains(got, "names no run waiting") || cc.n.Load() != 0 {
		t.Errorf("stale kiln state: %s, %d backend calls; want the refusal and none", got, cc.n.Load())
	}
	if got := call("backend-own-state"); !strings.Contains(got, "ran everything.image") || cc.n.Load() != 1 {
		t.Errorf("a backend's own state: %s, %d backend calls; want it passed to the backend once", got, cc.n.Load())
	}
}
