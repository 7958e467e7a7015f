//go:build e2e

package tests

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitBackend returns once server-everything answers through kiln, so the
// live lists have replaced the compiled ones.
func waitBackend(t *testing.T, s session) {
	t.Helper()
	if r := callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "up"})); r.IsError {
		t.Fatalf("everything did not come up: %s", r.Text())
	}
}

// TestPassthroughMCPGo reads server-everything's resources and renders its
// prompts through kiln over stdio with the mcp-go client, beside kiln's
// own resources and prompts.
func TestPassthroughMCPGo(t *testing.T) {
	s := newMCPGoStdio(t).(*mcpgoSession)
	ctx := t.Context()
	caps := s.c.GetServerCapabilities()
	if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged ||
		caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Completions == nil || caps.Logging == nil {
		t.Errorf("capabilities = %+v; want resources (subscribe, listChanged), prompts (listChanged), completions, logging", caps)
	}

	// Listed from the compiled manifests even before the backends connect.
	res, err := s.c.ListResources(ctx, mcpgo.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	titles := map[string]string{}
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
		titles[r.URI] = r.Title
	}
	for _, want := range []string{"kiln://overview", "demo://resource/static/document/architecture.md", "memory://knowledge-graph"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources/list lacks %s: %v", want, uris)
		}
	}
	if titles["memory://knowledge-graph"] != "Knowledge Graph" {
		t.Errorf("memory://knowledge-graph title = %q, want the recorded one", titles["memory://knowledge-graph"])
	}
	tpls, err := s.c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var raws []string
	for _, tp := range tpls.ResourceTemplates {
		raws = append(raws, tp.URITemplate.Raw())
	}
	for _, want := range []string{"kiln://backend/{backend_name}", "demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"} {
		if !slices.Contains(raws, want) {
			t.Errorf("resources/templates/list lacks %s: %v", want, raws)
		}
	}

	waitBackend(t, s)
	read := func(uri string) []mcpgo.ResourceContents {
		t.Helper()
		r, err := s.c.ReadResource(ctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(r.Contents) == 0 {
			t.Fatalf("read %s: no contents", uri)
		}
		return r.Contents
	}
	if c, ok := read("demo://resource/static/document/architecture.md")[0].(mcpgo.TextResourceContents); !ok || !strings.Contains(c.Text, "#") || c.MIMEType != "text/markdown" {
		t.Errorf("static text resource = %#v", c)
	}
	if c, ok := read("demo://resource/dynamic/text/3")[0].(mcpgo.TextResourceContents); !ok || !strings.Contains(c.Text, "Resource 3") {
		t.Errorf("templated text resource = %#v", c)
	}
	blob, ok := read("demo://resource/dynamic/blob/7")[0].(mcpgo.BlobResourceContents)
	if dec, err := base64.StdEncoding.DecodeString(blob.Blob); !ok || err != nil || !strings.Contains(string(dec), "Resource 7") {
		t.Errorf("templated blob resource = %#v (%v)", blob, err)
	}
	if c, ok := read("memory://knowledge-graph")[0].(mcpgo.TextResourceContents); !ok || !strings.Contains(c.Text, "entities") {
		t.Errorf("server-memory's knowledge graph = %#v", c)
	}
	if c, ok := read("kiln://overview")[0].(mcpgo.TextResourceContents); !ok || !strings.Contains(c.Text, "kiln") {
		t.Errorf("kiln://overview = %#v", c)
	}
	if _, err := s.c.ReadResource(ctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "nowhere://x"}}); err == nil {
		t.Error("reading an unknown URI succeeded")
	}

	pl, err := s.c.ListPrompts(ctx, mcpgo.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	for _, want := range []string{"discover", "find_tool", "backend_status", "everything__args-prompt", "everything__completable-prompt", "everything__simple-prompt"} {
		if !slices.Contains(names, want) {
			t.Errorf("prompts/list lacks %s: %v", want, names)
		}
	}
	gp, err := s.c.GetPrompt(ctx, mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Paris", "state": "Texas"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gp.Messages) == 0 || !strings.Contains(textOf(gp.Messages[0].Content), "Paris") {
		t.Errorf("everything__args-prompt = %#v", gp.Messages)
	}
	own, err := s.c.GetPrompt(ctx, mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "backend_status", Arguments: map[string]string{"backend_name": "everything"}}})
	if err != nil || len(own.Messages) == 0 || !strings.Contains(textOf(own.Messages[0].Content), "everything") {
		t.Errorf("kiln's backend_status prompt = %#v, %v", own, err)
	}

	comp, err := s.c.Complete(ctx, mcpgo.CompleteRequest{Params: mcpgo.CompleteParams{
		Ref:      mcpgo.PromptReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: mcpgo.CompleteArgument{Name: "name", Value: "A"},
		Context:  mcpgo.CompleteContext{Arguments: map[string]string{"department": "Engineering"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(comp.Completion.Values, []string{"Alice"}) {
		t.Errorf("completion of a backend prompt argument = %v, want [Alice]", comp.Completion.Values)
	}
	kc, err := s.c.Complete(ctx, mcpgo.CompleteRequest{Params: mcpgo.CompleteParams{
		Ref:      mcpgo.ResourceReference{Type: "ref/resource", URI: "kiln://backend/{backend_name}"},
		Argument: mcpgo.CompleteArgument{Name: "backend_name", Value: "ever"},
	}})
	if err != nil || !slices.Contains(kc.Completion.Values, "everything") {
		t.Errorf("kiln's own completion = %v, %v", kc, err)
	}
}

func textOf(c mcpgo.Content) string {
	if tc, ok := c.(mcpgo.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestPassthroughGoSDK does the same over streamable HTTP with the
// official go-sdk client.
func TestPassthroughGoSDK(t *testing.T) {
	url := startHTTP(t)
	waitBackend(t, newMCPGoHTTP(t, url))
	c := sdk.NewClient(&sdk.Implementation{Name: "kiln-e2e-sdk", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := t.Context()
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, "demo://resource/static/document/extension.md") || !slices.Contains(uris, "kiln://health") {
		t.Errorf("go-sdk resources = %v", uris)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/dynamic/blob/2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(string(rr.Contents[0].Blob), "Resource 2") {
		t.Errorf("go-sdk blob read = %+v", rr.Contents)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "everything__completable-prompt", Arguments: map[string]string{"department": "Sales", "name": "Eve"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := gp.Messages[0].Content.(*sdk.TextContent); !ok || !strings.Contains(tc.Text, "Eve") {
		t.Errorf("go-sdk prompt = %+v", gp.Messages[0].Content)
	}
	comp, err := cs.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: sdk.CompleteParamsArgument{Name: "department", Value: "S"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(comp.Completion.Values, []string{"Sales", "Support"}) {
		t.Errorf("go-sdk completion = %v", comp.Completion.Values)
	}
}

// updates collects the URIs of notifications/resources/updated a client
// receives.
type updates struct {
	mu   sync.Mutex
	uris []string
	got  chan string
}

func (u *updates) handle(n mcpgo.JSONRPCNotification) {
	if n.Method != "notifications/resources/updated" {
		return
	}
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	u.mu.Lock()
	u.uris = append(u.uris, uri)
	u.mu.Unlock()
	u.got <- uri
}

// waitFor blocks until uri arrived n times in all.
func (u *updates) waitFor(t *testing.T, uri string, n int) {
	t.Helper()
	seen := 0
	for seen < n {
		select {
		case got := <-u.got:
			if got == uri {
				seen++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no update of %s arrived (got %d of %d)", uri, seen, n)
		}
	}
}

// TestPassthroughSubscribe subscribes two HTTP sessions to different
// server-everything resources: each receives updates of its own resource
// and never the other's. server-everything repeats its updates every 5s,
// so waiting for each session's second update also proves that an update
// sent wrongly in the first round, which travels the same stream ahead of
// it, did not happen.
func TestPassthroughSubscribe(t *testing.T) {
	url := startHTTP(t)
	open := func() (*mcpclient.Client, *updates) {
		u := &updates{got: make(chan string, 64)}
		return legacyHTTP(t, url, u.handle), u
	}
	a, ua := open()
	b, ub := open()
	waitBackend(t, &mcpgoSession{a})
	const uriA, uriB = "demo://resource/static/document/architecture.md", "demo://resource/dynamic/text/5"
	for _, s := range []struct {
		c   *mcpclient.Client
		uri string
	}{{a, uriA}, {b, uriB}} {
		if err := subscribe(t, s.c, s.uri); err != nil {
			t.Fatalf("subscribe %s: %v", s.uri, err)
		}
	}
	if err := subscribe(t, a, "nowhere://x"); err == nil {
		t.Error("subscribing to a URI no backend serves succeeded")
	}
	toggle := func() {
		if r := callReady(t, &mcpgoSession{a}, "call_tool_chain", chainJSON("everything.toggle-subscriber-updates", map[string]any{})); r.IsError {
			t.Fatalf("toggle-subscriber-updates: %s", r.Text())
		}
	}
	toggle()
	defer toggle()
	ua.waitFor(t, uriA, 2)
	ub.waitFor(t, uriB, 2)
	ua.mu.Lock()
	defer ua.mu.Unlock()
	ub.mu.Lock()
	defer ub.mu.Unlock()
	if slices.Contains(ua.uris, uriB) || slices.Contains(ub.uris, uriA) {
		t.Errorf("an update reached a session that did not subscribe: a got %v, b got %v", ua.uris, ub.uris)
	}
}

func subscribe(t *testing.T, c *mcpclient.Client, uri string) error {
	t.Helper()
	return c.Subscribe(t.Context(), mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: uri}})
}

// legacyHTTP connects an mcp-go client on protocol 2025-11-25, where
// resources/subscribe and logging/setLevel are RPCs (later sessions use
// subscriptions/listen and per-request levels), listening on the standing
// GET stream, where notifications sent outside any request arrive.
func legacyHTTP(t *testing.T, url string, onNote func(mcpgo.JSONRPCNotification)) *mcpclient.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url+"/mcp", transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	c.OnNotification(onNote)
	startMCPGo(t, c)
	return c
}

// TestPassthroughLogs sets a client's log level through kiln and receives
// server-everything's simulated log messages, tagged with the backend,
// both during the call that starts them and afterwards, outside any call.
func TestPassthroughLogs(t *testing.T) {
	url := startHTTP(t)
	logs := make(chan mcpgo.JSONRPCNotification, 64)
	c := legacyHTTP(t, url, func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			logs <- n
		}
	})
	// A second client never sets a level: as from the backend directly,
	// it gets every level, not only errors.
	quiet := make(chan string, 64)
	legacyHTTP(t, url, func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			level, _ := n.Params.AdditionalFields["level"].(string)
			quiet <- level
		}
	})
	s := &mcpgoSession{c}
	waitBackend(t, s)
	if err := c.SetLevel(t.Context(), mcpgo.SetLevelRequest{Params: mcpgo.SetLevelParams{Level: mcpgo.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	toggle := func() {
		if r := callReady(t, s, "call_tool_chain", chainJSON("everything.toggle-simulated-logging", map[string]any{})); r.IsError {
			t.Fatalf("toggle-simulated-logging: %s", r.Text())
		}
	}
	toggle()
	defer toggle()
	// The first message comes during the call, the next ones every 5s
	// outside it; any level passes the debug threshold.
	for seen := 0; seen < 2; {
		select {
		case n := <-logs:
			data, _ := n.Params.AdditionalFields["data"].(string)
			if !strings.Contains(data, "-level message") && !strings.Contains(data, "level-message") {
				continue // e.g. the backend acknowledging a request
			}
			if logger, _ := n.Params.AdditionalFields["logger"].(string); logger != "backend/everything" {
				t.Errorf("log message %q has logger %q, want backend/everything", data, logger)
			}
			seen++
		case <-time.After(30 * time.Second):
			t.Fatalf("got %d of 2 simulated log messages", seen)
		}
	}
	// The backend picks each message's level at random, half of them
	// below error: twelve messages (a minute) all at error or above
	// happen once in 4,096 runs.
	var levels []string
	for deadline := time.After(time.Minute); ; {
		select {
		case level := <-quiet:
			levels = append(levels, level)
			switch level {
			case "debug", "info", "notice", "warning":
				return
			}
		case <-deadline:
			t.Fatalf("the client that set no level got only %v in a minute, want a level below error too", levels)
		}
	}
}

// TestPassthroughListChanged makes server-everything add a session
// resource: under drift: warn its resources/list_changed reaches the client through kiln,
// and kiln's list and reads include the new resource.
func TestPassthroughListChanged(t *testing.T) {
	// A session resource is new at run time: drift: pin (the default)
	// would hold it back, so this test of serving the live list says warn.
	t.Setenv("KILN_BACKENDS_EVERYTHING_DRIFT", "warn")
	url := startHTTP(t)
	changed := make(chan struct{}, 64)
	c := legacyHTTP(t, url, func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/resources/list_changed" {
			changed <- struct{}{}
		}
	})
	s := &mcpgoSession{c}
	waitBackend(t, s)
	const uri = "demo://resource/session/kiln-e2e.txt.gz"
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.gzip-file-as-resource", map[string]any{
		"name": "kiln-e2e.txt.gz", "data": "data:text/plain;base64,aGVsbG8gZnJvbSBraWxu", "outputType": "resourceLink",
	}))
	if r.IsError {
		t.Fatalf("gzip-file-as-resource: %s", r.Text())
	}
	listed := func() bool {
		res, err := c.ListResources(t.Context(), mcpgo.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			if r.URI == uri {
				return true
			}
		}
		return false
	}
	announced := false
	for !listed() {
		select {
		case <-changed:
			announced = true
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never appeared in resources/list", uri)
		}
	}
	if !announced {
		// kiln registered the new resource, which announces the change.
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/resources/list_changed reached the client")
		}
	}
	rr, err := c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := rr.Contents[0].(mcpgo.BlobResourceContents); !ok || b.Blob == "" {
		t.Errorf("session resource contents = %#v", rr.Contents)
	}
}

// TestPassthroughListenStream subscribes a 2026-07-28 session through a
// subscriptions/listen stream and a 2025-11-25 session through
// resources/subscribe: each gets the updates of its own resource only.
func TestPassthroughListenStream(t *testing.T) {
	url := startHTTP(t)
	const uriA, uriB = "demo://resource/static/document/features.md", "demo://resource/dynamic/text/9"
	ua := &updates{got: make(chan string, 64)}
	a, err := mcpclient.NewStreamableHttpClient(url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	a.OnNotification(ua.handle)
	sa := startMCPGo(t, a)
	waitBackend(t, sa)
	if v := a.ProtocolVersion(); v < "2026-07-28" {
		t.Fatalf("the mcp-go client negotiated %s; this test needs 2026-07-28", v)
	}
	ub := &updates{got: make(chan string, 64)}
	b := legacyHTTP(t, url, ub.handle)
	if err := subscribe(t, b, uriB); err != nil {
		t.Fatal(err)
	}
	listenErr := make(chan error, 1)
	stop, err := a.ListenAsync(t.Context(), mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{uriA}}, func(err error) { listenErr <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	toggle := func() {
		if r := callReady(t, sa, "call_tool_chain", chainJSON("everything.toggle-subscriber-updates", map[string]any{})); r.IsError {
			t.Fatalf("toggle-subscriber-updates: %s", r.Text())
		}
	}
	toggle()
	defer toggle()
	select {
	case err := <-listenErr:
		t.Fatalf("subscriptions/listen: %v", err)
	default:
	}
	ua.waitFor(t, uriA, 2)
	ub.waitFor(t, uriB, 2)
	ua.mu.Lock()
	defer ua.mu.Unlock()
	ub.mu.Lock()
	defer ub.mu.Unlock()
	if slices.Contains(ua.uris, uriB) || slices.Contains(ub.uris, uriA) {
		t.Errorf("an update reached a session that did not subscribe: a got %v, b got %v", ua.uris, ub.uris)
	}
}

// TestPassthroughModernBackend subscribes a client to a resource of a
// backend kiln talks to on 2026-07-28, where the subscription travels in
// kiln's subscriptions/listen stream to the backend, and the backend's
// updates come back to the client.
func TestPassthroughModernBackend(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "kiln.yaml")
	if err := os.WriteFile(cfg, []byte("version: 1\ngateway:\n  state_dir: "+dir+"\nbackends:\n  conf:\n    transport: stdio\n    command: "+conformanceServer(t)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startHTTP(t, "--config", cfg)
	const uri = "test://watched-resource"
	u := &updates{got: make(chan string, 64)}
	changed := make(chan struct{}, 64)
	c := legacyHTTP(t, url, func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/resources/list_changed" {
			changed <- struct{}{}
		}
		u.handle(n)
	})
	// conf is not compiled into kiln: its resources are listed once it
	// connects, which kiln announces.
	for {
		res, err := c.ListResources(t.Context(), mcpgo.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Resources, func(r mcpgo.Resource) bool { return r.URI == uri }) {
			break
		}
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never appeared in resources/list", uri)
		}
	}
	rr, err := c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "kiln://backend/conf"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := rr.Contents[0].(mcpgo.TextResourceContents).Text; !strings.Contains(text, `"protocol_version": "2026-07-28"`) {
		t.Fatalf("kiln does not talk 2026-07-28 to the backend, so this test proves nothing:\n%s", text)
	}
	if err := subscribe(t, c, uri); err != nil {
		t.Fatal(err)
	}
	u.waitFor(t, uri, 1)
}
