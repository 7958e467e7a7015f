//go:build e2e

package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A backend's requests to the client (elicitation, sampling, roots) reach
// the client that made the call, through kiln, with real servers and real
// clients on both sides.

// asker is a real mcp-go client's sampling, elicitation and roots
// handler: it answers with what it was told and records what it was asked.
type asker struct {
	name  string
	roots []string
	// gate, when set, holds each elicitation until it is closed, so two
	// sessions can be made to ask at the same moment.
	gate    chan struct{}
	arrived chan struct{}
	mu      sync.Mutex
	asked   []string
}

func (a *asker) record(s string) {
	a.mu.Lock()
	a.asked = append(a.asked, s)
	a.mu.Unlock()
}

func (a *asker) Elicit(ctx context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	a.record("elicit:" + string(req.Params.Mode) + ":" + req.Params.Message)
	if a.arrived != nil {
		a.arrived <- struct{}{}
	}
	if a.gate != nil {
		select {
		case <-a.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if req.Params.Mode == mcpgo.ElicitationModeURL {
		return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{Action: mcpgo.ElicitationResponseActionAccept}}, nil
	}
	content := map[string]any{"name": a.name, "check": true, "email": a.name + "@example.com"}
	fillRequired(content, req.Params.RequestedSchema, a.name)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action:  mcpgo.ElicitationResponseActionAccept,
		Content: content,
	}}, nil
}

// fillRequired answers the required fields of a form's schema that content
// lacks, the way a user would: a server on 2025-11-25 (the go-sdk's)
// checks the answer against its schema.
func fillRequired(content map[string]any, schema any, name string) {
	raw, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return
	}
	for _, k := range s.Required {
		if _, ok := content[k]; ok {
			continue
		}
		switch s.Properties[k].Type {
		case "boolean":
			content[k] = true
		case "number", "integer":
			content[k] = 1
		default:
			content[k] = name
		}
	}
}

func (a *asker) CreateMessage(_ context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	a.record("sample")
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent("sampled by " + a.name)},
		Model:           "kiln-e2e-model", StopReason: "endTurn",
	}, nil
}

func (a *asker) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	a.record("roots")
	a.mu.Lock()
	defer a.mu.Unlock()
	res := &mcpgo.ListRootsResult{Roots: []mcpgo.Root{}}
	for _, r := range a.roots {
		res.Roots = append(res.Roots, mcpgo.Root{URI: "file://" + r, Name: filepath.Base(r)})
	}
	return res, nil
}

// askClient starts kiln over stdio on cfg and connects an mcp-go client
// with a's handlers (nil: a client without those capabilities). legacy
// pins the client to the 2025-11-25 handshake, where kiln sends it
// requests; otherwise it speaks 2026-07-28 and kiln asks through
// input-required results.
func askClient(t *testing.T, cfg string, a *asker, legacy bool) *mcpclient.Client {
	t.Helper()
	tr := transport.NewStdioWithOptions(kilnBin(t), nil, []string{"serve", "--config", cfg},
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Dir = repoRoot(t)
			cmd.Stderr = testWriter{t, "kiln"}
			return cmd, nil
		}))
	var opts []mcpclient.ClientOption
	if a != nil {
		opts = append(opts, mcpclient.WithElicitationHandler(a), mcpclient.WithSamplingHandler(a), mcpclient.WithRootsHandler(a),
			mcpclient.WithClientCapabilities(mcpgo.ClientCapabilities{Elicitation: &mcpgo.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}}))
	}
	if legacy {
		opts = append(opts, mcpclient.WithLegacyProtocolOnly())
	}
	c := mcpclient.NewClient(tr, opts...)
	startMCPGo(t, c)
	return c
}

// protocols are the two ways kiln reaches a client.
var protocols = []struct {
	name   string
	legacy bool
}{{"2026-07-28", false}, {"2025-11-25", true}}

// chainCall runs call_tool_chain and returns its text, failing on a
// protocol error.
func chainCall(t *testing.T, c *mcpclient.Client, code string) result {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": code}}})
	if err != nil {
		t.Fatalf("call_tool_chain %s: %v", code, err)
	}
	r, err := toResult(res.Content, res.StructuredContent, res.IsError)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitTool waits until kiln knows a tool server-everything registers only
// for clients that can answer it (kiln picks it up from the live list).
func waitTool(t *testing.T, c *mcpclient.Client, id string) {
	t.Helper()
	backend, tool, _ := strings.Cut(id, ".")
	// The sandbox's bridge follows the registry a moment later.
	probe := fmt.Sprintf(`return typeof globalThis[%q][%q];`, backend, tool)
	eventually(t, "kiln lists "+id, func() bool {
		res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": probe}}})
		if err != nil || res.IsError {
			return false
		}
		r, _ := toResult(res.Content, res.StructuredContent, res.IsError)
		return strings.Contains(r.Text(), "function")
	})
}

func TestClientRequestsReachTheCaller(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) { testClientRequests(t, p.legacy) })
	}
}

func testClientRequests(t *testing.T, legacy bool) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true})
	a := &asker{name: "ada", roots: []string{"/tmp/ada-root"}}
	c := askClient(t, cfg, a, legacy)
	waitTool(t, c, "everything.trigger-elicitation-request")

	tiers := []struct{ name, code string }{
		{"tier1", `{"tool": "everything.trigger-elicitation-request", "arguments": {}}`},
		{"tier2", `return await everything.trigger_elicitation_request({});`},
		{"tier3", `const r = await everything.trigger_elicitation_request({});
const s = await everything.get_sum({a: 1, b: 2});
return {r, s};`},
	}
	for _, tc := range tiers {
		t.Run("elicit/"+tc.name, func(t *testing.T) {
			r := chainCall(t, c, tc.code)
			if r.IsError || !strings.Contains(r.Text(), "ada@example.com") {
				t.Fatalf("result does not carry the client's answer: isError=%v %s", r.IsError, r.Text())
			}
		})
	}
	t.Run("sampling", func(t *testing.T) {
		r := chainCall(t, c, `{"tool": "everything.trigger-sampling-request", "arguments": {"prompt": "hi"}}`)
		if r.IsError || !strings.Contains(r.Text(), "sampled by ada") {
			t.Fatalf("sampling answer missing: %s", r.Text())
		}
	})
	t.Run("url-elicitation", func(t *testing.T) {
		r := chainCall(t, c, `{"tool": "everything.trigger-url-elicitation", "arguments": {"url": "https://example.com/consent"}}`)
		if r.IsError || !strings.Contains(r.Text(), "accept") {
			t.Fatalf("URL elicitation answer missing: %s", r.Text())
		}
		if !a.has("elicit:url:") {
			t.Errorf("the client was not asked in URL mode: %v", a.asked)
		}
	})
	t.Run("roots", func(t *testing.T) {
		r := chainCall(t, c, `{"tool": "everything.get-roots-list", "arguments": {}}`)
		if r.IsError || !strings.Contains(r.Text(), "file:///tmp/ada-root") {
			t.Fatalf("roots answer missing: %s", r.Text())
		}
	})
}

func (a *asker) has(prefix string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.asked {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// A client without the capability gets a clear answer, not a hang: kiln
// refuses the backend's request at once and the backend reports it.
func TestClientRequestWithoutCapabilityFailsFast(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cfg := peerConfig(t, peerOptions{OnlyEverything: true})
			c := askClient(t, cfg, nil, p.legacy)
			// server-everything registers its eliciting tool because kiln
			// offers elicitation; this client cannot answer it.
			waitTool(t, c, "everything.trigger-elicitation-request")
			r := chainCall(t, c, `{"tool": "everything.trigger-elicitation-request", "arguments": {}}`)
			if !r.IsError || !strings.Contains(r.Text(), `did not declare the "elicitation" capability`) {
				t.Fatalf("want an error naming the missing capability, got isError=%v %s", r.IsError, r.Text())
			}
			r = chainCall(t, c, `{"tool": "everything.trigger-sampling-request", "arguments": {"prompt": "hi"}}`)
			if !r.IsError || !strings.Contains(r.Text(), `did not declare the "sampling" capability`) {
				t.Fatalf("want an error naming the missing capability, got isError=%v %s", r.IsError, r.Text())
			}
		})
	}
}

// askHTTP connects an mcp-go client with a's handlers to kiln over
// streamable HTTP.
func askHTTP(t *testing.T, url string, a *asker, legacy bool) *mcpclient.Client {
	t.Helper()
	var topts []transport.StreamableHTTPCOption
	if legacy {
		// Server requests of a 2025-11-25 session also come on the
		// standalone GET stream.
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url+"/mcp", topts...)
	if err != nil {
		t.Fatal(err)
	}
	opts := []mcpclient.ClientOption{mcpclient.WithElicitationHandler(a), mcpclient.WithSamplingHandler(a), mcpclient.WithRootsHandler(a)}
	if legacy {
		opts = append(opts, mcpclient.WithLegacyProtocolOnly())
	}
	c := mcpclient.NewClient(tr, opts...)
	startMCPGo(t, c)
	return c
}

// askConfig declares server-everything and lets register_manual start the
// fault server.
func askConfig(t *testing.T) string {
	t.Helper()
	mods := filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol")
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  registration:
    allow_commands: [%s]
    allow_hosts: [127.0.0.1]   # the HTTP backends these tests register listen on loopback
backends:
  everything:
    transport: stdio
    command: node
    args: [%s/server-everything/dist/index.js, stdio]
`, t.TempDir(), faultBin(t), mods)
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func register(t *testing.T, c *mcpclient.Client, tpl map[string]any) {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "register_manual", Arguments: map[string]any{"manual_call_template": tpl}}})
	if err != nil || res.IsError {
		t.Fatalf("register %v: %v %+v", tpl["name"], err, res)
	}
}

// Two sessions call the same backend and its requests to the client are in
// flight at the same moment: each session is asked its own question and
// each call gets its own answer. That holds wherever the backend's request
// can be tied to its call: a backend on protocol 2026-07-28 (input-required
// results, here the go-sdk fault server over stdio) and a streamable HTTP
// backend that asks on the call's response stream (the fault server over
// HTTP with the 2025-11-25 handshake, and server-everything on the
// TypeScript SDK's streamable HTTP).
func TestTwoSessionsEachGetTheirOwnAnswer(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) { testTwoSessions(t, p.legacy) })
	}
}

func testTwoSessions(t *testing.T, legacy bool) {
	url := startHTTP(t, "--config", askConfig(t))
	a := &asker{name: "ada", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	b := &asker{name: "bob", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	ca, cb := askHTTP(t, url, a, legacy), askHTTP(t, url, b, legacy)
	register(t, ca, map[string]any{"name": "fx", "transport": "stdio", "command": faultBin(t)})
	register(t, ca, map[string]any{"name": "fh", "transport": "http", "url": startFaultHTTPServer(t)})
	register(t, ca, map[string]any{"name": "eh", "transport": "http", "url": startEverythingHTTP(t)})

	for _, id := range []string{"fx.ask", "fh.ask", "eh.trigger-elicitation-request"} {
		t.Run(id, func(t *testing.T) {
			code := fmt.Sprintf(`{"tool": %q, "arguments": {"question": "your name?"}}`, id)
			if strings.HasPrefix(id, "eh.") {
				code = fmt.Sprintf(`{"tool": %q, "arguments": {}}`, id)
			}
			results := callAsBoth(t, ca, cb, code)
			// Both questions are open before either is answered.
			for _, x := range []*asker{a, b} {
				select {
				case <-x.arrived:
				case <-t.Context().Done():
					t.Fatalf("%s was never asked", x.name)
				}
			}
			a.gate <- struct{}{}
			b.gate <- struct{}{}
			for range 2 {
				r := <-results
				if !strings.Contains(r[1], "answer: "+r[0]) && !strings.Contains(r[1], r[0]+"@example.com") {
					t.Errorf("%s's call got %q, want its own answer", r[0], r[1])
				}
			}
		})
	}
}

// server-everything over stdio speaks 2025-11-25, whose requests to the
// client name no call. While one session's elicitation is open, a second
// session's call to the same backend asks too: kiln cannot tell whose
// question it is, so it refuses it at once, and the first session still
// gets its answer.
func TestAmbiguousRequestIsRefused(t *testing.T) {
	url := startHTTP(t, "--config", askConfig(t))
	a := &asker{name: "ada", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	b := &asker{name: "bob", arrived: make(chan struct{}, 8)}
	ca, cb := askHTTP(t, url, a, true), askHTTP(t, url, b, false)
	waitTool(t, ca, "everything.trigger-elicitation-request")
	code := `{"tool": "everything.trigger-elicitation-request", "arguments": {}}`
	first := make(chan result, 1)
	go func() { first <- chainCall(t, ca, code) }()
	select {
	case <-a.arrived:
	case <-t.Context().Done():
		t.Fatal("ada was never asked")
	}
	r := chainCall(t, cb, code)
	if !r.IsError || !strings.Contains(r.Text(), "calls from 2 client sessions") {
		t.Errorf("second session: want kiln's refusal, got isError=%v %s", r.IsError, r.Text())
	}
	if b.has("elicit") {
		t.Errorf("bob was asked a question that may be ada's: %v", b.asked)
	}
	a.gate <- struct{}{}
	if r := <-first; r.IsError || !strings.Contains(r.Text(), "ada@example.com") {
		t.Errorf("first session lost its answer: %s", r.Text())
	}
}

// The official go-sdk client (2026-07-28, input-required rounds) answers an
// elicitation from inside a TypeScript program and lists its roots.
func TestGoSDKClientAnswersFromAProgram(t *testing.T) {
	cmd := exec.Command(kilnBin(t), "serve", "--config", peerConfig(t, peerOptions{OnlyEverything: true}))
	cmd.Dir = repoRoot(t)
	cmd.Stderr = testWriter{t, "kiln"}
	c := sdk.NewClient(&sdk.Implementation{Name: "kiln-e2e-sdk", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "grace", "check": true, "email": "grace@example.com"}}, nil
		},
	})
	c.AddRoots(&sdk.Root{URI: "file:///tmp/grace-root", Name: "grace"})
	cs, err := c.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(code string) string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": code}})
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s: error result %s", code, strings.Join(parts, "\n"))
		}
		return strings.Join(parts, "\n")
	}
	eventually(t, "the sandbox knows everything.trigger-elicitation-request", func() bool {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "call_tool_chain",
			Arguments: map[string]any{"code": `return typeof globalThis["everything"]["trigger-elicitation-request"];`}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			return false
		}
		tc, ok := res.Content[0].(*sdk.TextContent)
		return ok && strings.Contains(tc.Text, "function")
	})
	out := call(`const sum = await everything.get_sum({a: 2, b: 3});
const r = await everything.trigger_elicitation_request({});
return {sum, r};`)
	if !strings.Contains(out, "grace@example.com") {
		t.Errorf("program result lacks the go-sdk client's answer: %s", out)
	}
	if out := call(`{"tool": "everything.get-roots-list", "arguments": {}}`); !strings.Contains(out, "file:///tmp/grace-root") {
		t.Errorf("roots: %s", out)
	}
}

// server-filesystem replaces its folders with the client's roots. Behind
// kiln over stdio (one client), it asks when it connects and again when
// the client's roots change, and kiln answers with the client's roots.
func TestFilesystemServesTheClientsRoots(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	cfgText := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  registration:
    allow_commands: [%s]
    allow_hosts: [127.0.0.1]   # the HTTP backends these tests register listen on loopback
backends:
  everything:
    transport: stdio
    command: %s
    args: [%s/tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js, stdio]
`, t.TempDir(), node, node, repoRoot(t))
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	own, first, second := t.TempDir(), t.TempDir(), t.TempDir()
	a := &asker{name: "ada", roots: []string{first}}
	c := askClient(t, cfg, a, true)
	register(t, c, map[string]any{"name": "fsroots", "transport": "stdio", "command": node,
		"args": []string{filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), own}})
	allowed := func() string {
		return chainCall(t, c, `{"tool": "fsroots.list_allowed_directories", "arguments": {}}`).Text()
	}
	eventually(t, "server-filesystem serves the client's root", func() bool {
		return strings.Contains(allowed(), first)
	})
	if strings.Contains(allowed(), own) {
		t.Errorf("the folder kiln started it with is still served: %s", allowed())
	}
	a.mu.Lock()
	a.roots = []string{second}
	a.mu.Unlock()
	if err := c.RootListChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "server-filesystem follows roots/list_changed", func() bool {
		return strings.Contains(allowed(), second)
	})
}

var (
	confOnce sync.Once
	confPath string
	confErr  error
)

// conformanceServer builds the go-sdk conformance everything-server once,
// with tests/conformance/build-gosdk.sh (the go-sdk version in go.mod, in a
// scratch module: its package needs go.sum entries this module lacks), or
// takes it from $KILN_FIXTURES, where make builds it once for e2e and
// conformance both.
func conformanceServer(t *testing.T) string {
	t.Helper()
	confOnce.Do(func() {
		if dir := os.Getenv("KILN_FIXTURES"); dir != "" {
			confPath = filepath.Join(dir, "everything-server")
			return
		}
		dir, err := os.MkdirTemp("", "kiln-conformance-server")
		if err != nil {
			confErr = err
			return
		}
		confPath = filepath.Join(dir, "everything-server")
		cmd := exec.Command(filepath.Join(repoRoot(t), "tests/conformance/build-gosdk.sh"), "everything-server", confPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			confErr = fmt.Errorf("build the go-sdk conformance server: %v\n%s", err, out)
		}
	})
	if confErr != nil {
		t.Fatal(confErr)
	}
	return confPath
}

// The go-sdk conformance server over stdio speaks 2026-07-28: its
// input-required results reach the client, through kiln's own rounds for
// a program's call (an input-required result on 2026-07-28); a 2025-11-25
// client's calls go over a backend session of that era, where the server
// asks in-band and kiln relays the requests.
func TestConformanceServerInputRequired(t *testing.T) {
	bin := conformanceServer(t)
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  registration:\n    allow_commands: [%s]\n    allow_hosts: [127.0.0.1]\nbackends: {}\n", t.TempDir(), bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			a := &asker{name: "ada", roots: []string{"/tmp/ada-root"}}
			c := askClient(t, cfg, a, p.legacy)
			register(t, c, map[string]any{"name": "conf", "transport": "stdio", "command": bin})
			cases := map[string]string{
				"test_input_required_result_elicitation":     "Hello, ada!",
				"test_input_required_result_sampling":        "Sampling response: sampled by ada",
				"test_input_required_result_list_roots":      "Client exposed 1 root(s): file:///tmp/ada-root",
				"test_input_required_result_multiple_inputs": "sampled by ada ada — 1 root(s) visible",
				"test_input_required_result_request_state":   "state-ok",
			}
			if !p.legacy {
				// A 2025-11-25 client's calls go over a backend session of
				// its era, where this server answers the first round
				// in-band and returns the second round's questions as an
				// empty result — what a 2025-11-25 client gets from it
				// directly too.
				cases["test_input_required_result_multi_round"] = "Multi-round complete: ada likes"
			}
			for tool, want := range cases {
				r := chainCall(t, c, fmt.Sprintf(`{"tool": "conf.%s", "arguments": {}}`, tool))
				if r.IsError || !strings.Contains(r.Text(), want) {
					t.Errorf("%s: isError=%v %q, want %q", tool, r.IsError, r.Text(), want)
				}
			}
		})
	}
}

// mcp-go's HTTP client gives a question that arrives on a streamable HTTP
// backend's response stream 30 s, and loses any answer sent later. A client
// that does not answer in time makes kiln refuse the question just before
// that, so the backend gets a clear error instead of waiting forever.
func TestLateAnswerIsRefusedNotHung(t *testing.T) {
	url := startHTTP(t, "--config", askConfig(t))
	a := &asker{name: "ada", gate: make(chan struct{}), arrived: make(chan struct{}, 8)} // never opened
	c := askHTTP(t, url, a, true)
	register(t, c, map[string]any{"name": "fh", "transport": "http", "url": startFaultHTTPServer(t), "timeout": "2m"})
	res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain",
		Arguments: map[string]any{"code": `{"tool": "fh.ask", "arguments": {"question": "q"}}`, "timeout": 90000}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := toResult(res.Content, res.StructuredContent, res.IsError)
	if !r.IsError || !strings.Contains(r.Text(), `the client did not answer backend "fh"'s elicitation/create within the `) {
		t.Fatalf("want kiln's refusal, got isError=%v %s", r.IsError, r.Text())
	}
}

// The legacy SSE front door carries kiln's request to the client too.
func TestClientRequestOverSSE(t *testing.T) {
	url := startHTTP(t, "--config", peerConfig(t, peerOptions{OnlyEverything: true}))
	a := &asker{name: "ada"}
	tr, err := transport.NewSSE(url + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithElicitationHandler(a), mcpclient.WithSamplingHandler(a), mcpclient.WithRootsHandler(a))
	startMCPGo(t, c)
	waitTool(t, c, "everything.trigger-elicitation-request")
	r := chainCall(t, c, `return await everything.trigger_elicitation_request({});`)
	if r.IsError || !strings.Contains(r.Text(), "ada@example.com") {
		t.Fatalf("over SSE: isError=%v %s", r.IsError, r.Text())
	}
}

// startEverythingHTTP runs server-everything on streamable HTTP (TypeScript
// SDK, 2025-11-25) and returns its URL. It takes its port from PORT, so a
// free one is picked first.
func startEverythingHTTP(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-t.Context().Done():
		t.Fatal("server-everything did not listen")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// legacyConfig declares the go-sdk conformance server (it speaks
// 2026-07-28, where it will not send requests in the middle of a call) and
// server-everything (2025-11-25) as stdio backends, with extra gateway
// lines (e.g. expose: direct).
func legacyConfig(t *testing.T, gateway string) string {
	t.Helper()
	mods := filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol")
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
%sbackends:
  conf:
    command: %s
  everything:
    command: node
    args: [%s/server-everything/dist/index.js, stdio]
`, t.TempDir(), gateway, conformanceServer(t), mods)
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Two 2025-11-25 sessions whose calls elicit at the same moment, through
// two stdio backends: the go-sdk conformance server, whose shared session
// with kiln is on 2026-07-28 (where it refuses to elicit in-band), and
// server-everything on 2025-11-25, whose stdio requests name no call. Each
// session gets a backend session of its own era, so each is asked its own
// question and each call gets its own answer; sampling works the same way.
func TestLegacySessionsGetBackendSessionsOfTheirEra(t *testing.T) {
	url := startHTTP(t, "--config", legacyConfig(t, ""))
	a := &asker{name: "ada", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	b := &asker{name: "bob", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	ca, cb := askHTTP(t, url, a, true), askHTTP(t, url, b, true)
	waitTool(t, ca, "conf.test_elicitation")
	waitTool(t, ca, "everything.trigger-elicitation-request")

	for _, code := range []string{
		`{"tool": "conf.test_elicitation", "arguments": {"message": "your name?"}}`,
		`{"tool": "everything.trigger-elicitation-request", "arguments": {}}`,
	} {
		t.Run(strings.Fields(code)[1], func(t *testing.T) {
			results := callAsBoth(t, ca, cb, code)
			// Both questions are open before either is answered; a call
			// that ends first was refused.
			for _, x := range []*asker{a, b} {
				select {
				case <-x.arrived:
				case r := <-results:
					t.Fatalf("%s's call ended before %s was asked: %s", r[0], x.name, r[1])
				case <-t.Context().Done():
					t.Fatalf("%s was never asked", x.name)
				}
			}
			a.gate <- struct{}{}
			b.gate <- struct{}{}
			for range 2 {
				r := <-results
				if !strings.Contains(r[1], r[0]+"@example.com") {
					t.Errorf("%s's call got %q, want its own answer", r[0], r[1])
				}
			}
		})
	}
	t.Run("sampling", func(t *testing.T) {
		for _, s := range []struct {
			name string
			c    *mcpclient.Client
		}{{"ada", ca}, {"bob", cb}} {
			r := chainCall(t, s.c, `{"tool": "conf.test_sampling", "arguments": {"prompt": "hi"}}`)
			if r.IsError || !strings.Contains(r.Text(), "LLM response: sampled by "+s.name) {
				t.Errorf("%s: isError=%v %q, want its own sampled answer", s.name, r.IsError, r.Text())
			}
		}
	})
}

// post2026 sends one 2026-07-28 request to kiln's streamable HTTP endpoint
// with the client capabilities given, as a stateless client does, and
// returns the HTTP status and the decoded JSON-RPC response.
func post2026(t *testing.T, url, method string, params map[string]any, caps map[string]any) (int, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "kiln-e2e-raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// A streamed answer carries the response as the last data: line.
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data:"); ok {
				raw = []byte(strings.TrimSpace(d))
				break
			}
		}
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: undecodable answer (HTTP %d): %v\n%s", method, resp.StatusCode, err, raw)
	}
	return resp.StatusCode, out
}

// A 2026-07-28 client calling a 2026-07-28 backend's tool by name through
// kiln (direct exposure) gets the backend's own rounds: all its questions
// in one input-required result under the backend's keys, only those its
// declared capabilities allow, the backend's requestState (tampered, the
// backend refuses it), and the backend's -32021 with HTTP 400 when a
// capability it needs is missing.
func TestModernRoundsPassThrough(t *testing.T) {
	url := startHTTP(t, "--config", legacyConfig(t, "  expose: hybrid\n  pin: [conf.*]\n"))
	a := &asker{name: "ada", roots: []string{"/tmp/ada-root"}}
	c := askHTTP(t, url, a, false)
	eventually(t, "kiln lists the pinned conf tools", func() bool {
		res, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(res.Tools, func(tl mcpgo.Tool) bool { return tl.Name == "conf__test_missing_capability" })
	})
	all := map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}
	tool := func(name string, extra map[string]any) map[string]any {
		p := map[string]any{"name": "conf__" + name, "arguments": map[string]any{}}
		maps.Copy(p, extra)
		return p
	}

	_, out := post2026(t, url, "tools/call", tool("test_input_required_result_multiple_inputs", nil), all)
	res, _ := out["result"].(map[string]any)
	reqs, _ := res["inputRequests"].(map[string]any)
	if res["resultType"] != "input_required" || len(reqs) < 3 {
		t.Fatalf("want one round with all 3 questions, got %v", out)
	}
	for k := range reqs {
		if strings.HasPrefix(k, "kiln-") {
			t.Errorf("input request key %q is kiln's, want the backend's own", k)
		}
	}

	_, out = post2026(t, url, "tools/call", tool("test_input_required_result_capabilities", nil), map[string]any{"sampling": map[string]any{}})
	res, _ = out["result"].(map[string]any)
	reqs, _ = res["inputRequests"].(map[string]any)
	if res["resultType"] != "input_required" || len(reqs) == 0 {
		t.Fatalf("want a sampling round, got %v", out)
	}
	for k, v := range reqs {
		if m, _ := v.(map[string]any)["method"].(string); m != "sampling/createMessage" {
			t.Errorf("input request %q asks %s of a client that declared only sampling", k, m)
		}
	}

	_, out = post2026(t, url, "tools/call", tool("test_input_required_result_tampered_state",
		map[string]any{"requestState": "tampered", "inputResponses": map[string]any{}}), all)
	if res, _ := out["result"].(map[string]any); out["error"] == nil && res["isError"] != true && res["resultType"] != "input_required" {
		t.Errorf("a tampered requestState was accepted: %v", out)
	}

	status, out := post2026(t, url, "tools/call", tool("test_missing_capability", nil), map[string]any{})
	e, _ := out["error"].(map[string]any)
	if status != http.StatusBadRequest || e == nil || e["code"] != float64(-32021) {
		t.Errorf("want the backend's -32021 with HTTP 400, got HTTP %d %v", status, out)
	}
	// The same tool with the capability runs: kiln forwarded the client's
	// capabilities, not its own.
	_, out = post2026(t, url, "tools/call", tool("test_missing_capability", nil), all)
	if res, _ := out["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("with sampling declared the tool should run: %v", out)
	}

	// A prompt's rounds pass through the same way.
	_, out = post2026(t, url, "prompts/get", map[string]any{"name": "conf__test_input_required_result_prompt"}, all)
	if res, _ := out["result"].(map[string]any); res["resultType"] != "input_required" {
		t.Errorf("prompts/get: want the backend's input-required result, got %v", out)
	}
}

// callAsBoth runs code through call_tool_chain from ada's and bob's
// sessions at once; each result arrives as {name, text}.
func callAsBoth(t *testing.T, ca, cb *mcpclient.Client, code string) <-chan [2]string {
	results := make(chan [2]string, 2)
	for _, s := range []struct {
		name string
		c    *mcpclient.Client
	}{{"ada", ca}, {"bob", cb}} {
		go func() {
			res, err := s.c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": code}}})
			if err != nil {
				results <- [2]string{s.name, err.Error()}
				return
			}
			r, _ := toResult(res.Content, res.StructuredContent, res.IsError)
			results <- [2]string{s.name, r.Text()}
		}()
	}
	return results
}

// Over stdio too, a 2026-07-28 client calling a backend's tool by name
// gets the backend's own JSON-RPC error for a round it refuses: -32021
// with its data, which names the capability to declare, not mcp-go's
// -32603 with the code folded into the message.
func TestModernRoundErrorOverStdio(t *testing.T) {
	s := startRawStdio(t, "--config", legacyConfig(t, "  expose: hybrid\n  pin: [conf.*]\n"))
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"kiln-e2e-raw","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":%s}`
	call := func(caps string) []byte {
		s.next++
		id := fmt.Sprintf(`"c-%d"`, s.next)
		s.send(request(id, "tools/call", `{"name":"conf__test_missing_capability","arguments":{},`+fmt.Sprintf(meta, caps)+`}`))
		for {
			line := <-s.lines
			var r rpcReply
			if json.Unmarshal(line, &r) == nil && string(r.ID) == id {
				return line
			}
		}
	}
	var line []byte
	eventually(t, "the backend's tool is served under its own name", func() bool {
		line = call(`{}`)
		return !bytes.Contains(line, []byte("conf__test_missing_capability")) || bytes.Contains(line, []byte(`"code":-32021`))
	})
	var r struct {
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &r); err != nil || r.Error == nil || r.Error.Code != -32021 || len(r.Error.Data) == 0 {
		t.Fatalf("want the backend's -32021 with its data, got %s", line)
	}
	if res := call(`{"sampling":{},"elicitation":{},"roots":{}}`); bytes.Contains(res, []byte(`"error"`)) {
		t.Errorf("with the capabilities declared the tool should run: %s", res)
	}
}
