//go:build e2e

package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkPassthroughRead reads one templated server-everything resource
// and renders one of its prompts, directly over stdio and through kiln over
// stdio, with the same mcp-go client: the difference is what passing
// through kiln costs.
func BenchmarkPassthroughRead(b *testing.B) {
	direct := func(b *testing.B) *mcpclient.Client {
		root := repoRoot(b)
		tr := transport.NewStdioWithOptions("node", nil,
			[]string{filepath.Join(root, "tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				return exec.Command(command, args...), nil
			}))
		return startBench(b, mcpclient.NewClient(tr))
	}
	viaKiln := func(b *testing.B) *mcpclient.Client {
		tr := transport.NewStdioWithOptions(kilnBin(b), nil, []string{"serve"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				cmd := exec.Command(command, args...)
				cmd.Dir = repoRoot(b)
				cmd.Env = ownState(b, nil)
				return cmd, nil
			}))
		c := startBench(b, mcpclient.NewClient(tr))
		// Wait until everything is connected: a read through kiln fails
		// while it starts.
		for {
			if _, err := c.ReadResource(b.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "demo://resource/dynamic/text/1"}}); err == nil {
				return c
			}
		}
	}
	for _, path := range []struct {
		name   string
		open   func(*testing.B) *mcpclient.Client
		prompt string
	}{{"direct", direct, "args-prompt"}, {"kiln", viaKiln, "everything__args-prompt"}} {
		b.Run(path.name+"/read", func(b *testing.B) {
			c := path.open(b)
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.ReadResource(b.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "demo://resource/dynamic/text/1"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(path.name+"/prompt", func(b *testing.B) {
			c := path.open(b)
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.GetPrompt(b.Context(), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: path.prompt, Arguments: map[string]string{"city": "Oslo"}}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func startBench(b *testing.B, c *mcpclient.Client) *mcpclient.Client {
	b.Helper()
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Initialize(b.Context(), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "kiln-bench", Version: "1"},
	}}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}
