// Command democlient is what `make demo` runs: a real MCP client (mcp-go)
// that starts `kiln serve` over stdio on the default config and walks
// through search_tools → tool_info → call_tool_chain, printing each step.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	kiln := flag.String("kiln", "bin/kiln", "path to the kiln binary")
	flag.Parse()
	if err := run(*kiln); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
	fmt.Println("\ndemo passed: a real MCP client discovered and called backend tools through kiln")
}

func run(kiln string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.NewStdioMCPClient(kiln, nil, "serve")
	if err != nil {
		return err
	}
	defer c.Close()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "kiln-demo", Version: "1"},
	}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	step("connected", "%s %s over stdio, protocol %s", init.ServerInfo.Name, init.ServerInfo.Version, c.ProtocolVersion())

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	step("tools/list", "%d meta-tools: %s", len(names), strings.Join(names, ", "))

	if _, err := call(ctx, c, "search_tools", map[string]any{"task_description": "add two numbers", "limit": 3}); err != nil {
		return err
	}
	if _, err := call(ctx, c, "tool_info", map[string]any{"tool_name": "everything.get-sum"}); err != nil {
		return err
	}
	// Backends connect in the background; the first call may find one
	// still starting, which kiln says plainly. Retry briefly.
	if err := retry(ctx, func() error {
		_, err := call(ctx, c, "call_tool_chain", map[string]any{"code": `{"tool": "everything.get-sum", "arguments": {"a": 2, "b": 3}}`})
		return err
	}); err != nil {
		return err
	}
	notes, err := filepath.Abs("tests/demo/notes.txt")
	if err != nil {
		return err
	}
	code, _ := json.Marshal(map[string]any{"tool": "filesystem.read_text_file", "arguments": map[string]any{"path": notes}})
	if err := retry(ctx, func() error {
		_, err := call(ctx, c, "call_tool_chain", map[string]any{"code": string(code)})
		return err
	}); err != nil {
		return err
	}
	// One TypeScript program, three backend calls, two of them concurrent:
	// the round trips an agent saves with call_tool_chain.
	program := `const sum = await everything.get_sum({a: 19, b: 23});
const [echo, files] = await Promise.all([
  everything.echo({message: "hello from the sandbox"}),
  filesystem.list_allowed_directories({}),
]);
console.log("3 calls done");
return {sum, echo, allowed: files};`
	if err := retry(ctx, func() error {
		_, err := call(ctx, c, "call_tool_chain", map[string]any{"code": program})
		return err
	}); err != nil {
		return err
	}
	return nil
}

var errStarting = errors.New("backend still starting")

func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if !errors.Is(err, errStarting) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func call(ctx context.Context, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	argText, _ := json.Marshal(args)
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	text := contentText(res)
	if res.IsError {
		if strings.Contains(text, "still starting") {
			return nil, errStarting
		}
		return nil, fmt.Errorf("%s returned an error: %s", tool, text)
	}
	step(tool+" "+string(argText), "%s", text)
	return res, nil
}

func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			parts = append(parts, v.Text)
		default:
			raw, _ := json.Marshal(v)
			parts = append(parts, string(raw))
		}
	}
	return strings.Join(parts, "\n")
}

func step(title, format string, a ...any) {
	fmt.Printf("\n── %s\n", title)
	body := fmt.Sprintf(format, a...)
	for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		fmt.Println("   " + line)
	}
}
