//go:build e2e

package tests

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is what every client under test reports of one tool call, in the
// wire shape, so assertions are the same for every client.
type result struct {
	IsError    bool
	Content    []map[string]any
	Structured json.RawMessage
}

// Text joins the text blocks.
func (r result) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c["type"] == "text" {
			parts = append(parts, c["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

// session is one connected MCP client.
type session interface {
	ListTools(ctx context.Context) ([]string, error)
	Call(ctx context.Context, name string, args map[string]any) (result, error)
	Close() error
}

// mcpgoSession drives kiln with mark3labs/mcp-go's client.
type mcpgoSession struct{ c *mcpclient.Client }

func newMCPGoStdio(t *testing.T, args ...string) session {
	t.Helper()
	env := ownState(t, args)
	tr := transport.NewStdioWithOptions(kilnBin(t), nil, append([]string{"serve"}, args...),
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Dir = repoRoot(t)
			cmd.Env = env
			cmd.Stderr = testWriter{t, "kiln"}
			return cmd, nil
		}))
	return startMCPGo(t, mcpclient.NewClient(tr))
}

func newMCPGoHTTP(t *testing.T, url string) session {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	return startMCPGo(t, c)
}

func newMCPGoSSE(t *testing.T, url string) session {
	t.Helper()
	c, err := mcpclient.NewSSEMCPClient(url + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	return startMCPGo(t, c)
}

func startMCPGo(t *testing.T, c *mcpclient.Client) session {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	if _, err := c.Initialize(t.Context(), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "kiln-e2e", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	s := &mcpgoSession{c}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *mcpgoSession) ListTools(ctx context.Context) ([]string, error) {
	res, err := s.c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (s *mcpgoSession) Call(ctx context.Context, name string, args map[string]any) (result, error) {
	res, err := s.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return result{}, err
	}
	return toResult(res.Content, res.StructuredContent, res.IsError)
}

func (s *mcpgoSession) Close() error { return s.c.Close() }

// sdkSession drives kiln with the official go-sdk client, which probes
// server/discover before falling back to initialize.
type sdkSession struct{ cs *sdk.ClientSession }

func newSDKStdio(t *testing.T) session {
	t.Helper()
	cmd := exec.Command(kilnBin(t), "serve")
	cmd.Dir = repoRoot(t)
	cmd.Env = ownState(t, nil)
	cmd.Stderr = testWriter{t, "kiln"}
	return connectSDK(t, &sdk.CommandTransport{Command: cmd})
}

func newSDKHTTP(t *testing.T, url string) session {
	t.Helper()
	return connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url + "/mcp"})
}

func connectSDK(t *testing.T, tr sdk.Transport) session {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "kiln-e2e-sdk", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("go-sdk connect: %v", err)
	}
	s := &sdkSession{cs}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *sdkSession) ListTools(ctx context.Context) ([]string, error) {
	res, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (s *sdkSession) Call(ctx context.Context, name string, args map[string]any) (result, error) {
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return result{}, err
	}
	return toResult(res.Content, res.StructuredContent, res.IsError)
}

func (s *sdkSession) Close() error { return s.cs.Close() }

// toResult re-encodes a client's decoded content in wire form.
func toResult[C any](content []C, structured any, isError bool) (result, error) {
	r := result{IsError: isError}
	raw, err := json.Marshal(content)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r.Content); err != nil {
		return r, err
	}
	if structured != nil {
		if r.Structured, err = json.Marshal(structured); err != nil {
			return r, err
		}
	}
	return r, nil
}
