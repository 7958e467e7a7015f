//go:build e2e

package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
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
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action:  mcpgo.ElicitationResponseActionAccept,
		Content: map[string]any{"name": a.name, "check": true, "email": a.name + "@example.com"},
	}}, nil
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
	res := &mcpgo.ListRootsResult{Roots: []mcpgo.Root{}}
	for _, r := range a.roots {
		res.Roots = append(res.Roots, mcpgo.Root{URI: "file://" + r, Name: filepath.Base(r)})
	}
	return res, nil
}

// askClient starts kiln over stdio on cfg and connects an mcp-go client
// with a's handlers (nil: a client without those capabilities).
func askClient(t *testing.T, cfg string, a *asker) *mcpclient.Client {
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
	c := mcpclient.NewClient(tr, opts...)
	startMCPGo(t, c)
	return c
}

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
	eventually(t, "kiln lists "+id, func() bool {
		res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "tool_info", Arguments: map[string]any{"tool_name": id}}})
		return err == nil && !res.IsError
	})
}

func TestClientRequestsReachTheCaller(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true})
	a := &asker{name: "ada", roots: []string{"/tmp/ada-root"}}
	c := askClient(t, cfg, a)
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
	cfg := peerConfig(t, peerOptions{OnlyEverything: true})
	c := askClient(t, cfg, nil)
	// server-everything registers its eliciting tool because kiln offers
	// elicitation; this client cannot answer it.
	waitTool(t, c, "everything.trigger-elicitation-request")
	r := chainCall(t, c, `{"tool": "everything.trigger-elicitation-request", "arguments": {}}`)
	if !r.IsError || !strings.Contains(r.Text(), `did not declare the "elicitation" capability`) {
		t.Fatalf("want an error naming the missing capability, got isError=%v %s", r.IsError, r.Text())
	}
}
