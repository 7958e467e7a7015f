package server

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// expectPrompt gets a prompt and checks its one user message, or that it
// fails with an error containing every string of contains.
func expectPrompt(t *testing.T, c *client.Client, name string, args map[string]string, wantErr bool, contains, excludes []string) {
	t.Helper()
	res, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name, Arguments: args}})
	var text string
	switch {
	case wantErr && err == nil:
		t.Fatalf("%s(%v): no error, want one containing %q", name, args, contains)
	case wantErr:
		text = err.Error()
	case err != nil:
		t.Fatalf("%s(%v): %v", name, args, err)
	default:
		if len(res.Messages) != 1 || res.Messages[0].Role != mcp.RoleUser {
			t.Fatalf("%s(%v): messages %+v, want one user message", name, args, res.Messages)
		}
		text = res.Messages[0].Content.(mcp.TextContent).Text
	}
	for _, w := range contains {
		if !strings.Contains(text, w) {
			t.Errorf("%s(%v) lacks %q:\n%s", name, args, w, text)
		}
	}
	for _, w := range excludes {
		if strings.Contains(text, w) {
			t.Errorf("%s(%v) contains %q:\n%s", name, args, w, text)
		}
	}
}

func TestPromptList(t *testing.T) {
	c := fleet(t)
	res, err := c.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, p := range res.Prompts {
		for _, a := range p.Arguments {
			arg := a.Name
			if a.Required {
				arg += " (required)"
			}
			got[p.Name] = append(got[p.Name], arg)
		}
	}
	want := map[string][]string{"discover": {"topic"}, "find_tool": {"task (required)"}, "backend_status": {"backend_name"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prompts (-want +got):\n%s", d)
	}
}

func TestPrompts(t *testing.T) {
	c := fleet(t)
	tests := []struct {
		name               string
		prompt             string
		args               map[string]string
		wantErr            bool
		contains, excludes []string
	}{
		{"discover without a topic", "discover", nil, false, []string{
			"kiln serves 8 tools from 7 backends (3 healthy, 2 unhealthy, 1 disabled, 1 not configured)",
			"Read kiln://overview", "search_tools", "tool_info", "kiln://call_tool_chain", "kiln://health",
			"Backends: crashy (unhealthy, 1 tool), dyn (healthy, 1 tool), everything (healthy, 2 tools)"}, []string{"Likely starting points"}},
		{"discover a backend", "discover", map[string]string{"topic": "Files"}, false, []string{
			`"files" is a backend (unhealthy, 3 tools): read kiln://backend/files/tools`, `task_description "Files"`}, nil},
		{"discover a task", "discover", map[string]string{"topic": "read a file"}, false, []string{
			`Explore the kiln MCP gateway for "read a file"`, "1. Call search_tools with task_description \"read a file\"",
			"   Likely starting points: files.read_file", "\n2. If nothing fits", "\n3. Call tool_info"}, []string{"is a backend"}},
		{"find_tool", "find_tool", map[string]string{"task": "read a file"}, false, []string{
			`match the task "read a file"`, "1. files.read_file: Reads a file.\n   Signature: {path: string}\n   Example: files.read_file({path: \"…\"})",
			"tool_info", "call_tool_chain"}, []string{"allowed roots"}},
		{"find_tool ranks the sum tools", "find_tool", map[string]string{"task": "sum of two numbers"}, false, []string{
			"1. everything.get-sum: Returns the sum of two numbers.", "Example: everything.get_sum({a: 1})"}, nil},
		{"find_tool without a task", "find_tool", nil, true, []string{`"task" argument is required`}, nil},
		{"find_tool with a blank task", "find_tool", map[string]string{"task": "  "}, true, []string{`"task" argument is required`}, nil},
		{"find_tool without a match", "find_tool", map[string]string{"task": "qqqxxzzv"}, false, []string{
			`No tool in kiln matches the task "qqqxxzzv"`, "kiln://tools (8 tools)"}, nil},
		{"backend_status of every backend", "backend_status", nil, false, []string{
			"degraded: 3 of 5 backends healthy; unhealthy: crashy, files",
			"- files: unhealthy since 2030-01-02T03:04:05Z: health probe failed 3 times: context deadline exceeded. Calls to files fail fast until kiln retries at 2030-01-02T04:04:05Z (in ",
			"- crashy: unhealthy", "stopped restarting crashy", "Off on purpose: legacy (not configured), off (disabled)."},
			[]string{"- everything:"}},
		{"backend_status of one backend", "backend_status", map[string]string{"backend_name": "files"}, false, []string{
			`kiln backend "files"`, "State: unhealthy since 2030-01-02T03:04:05Z (stdio; 3 tools; compiled in)",
			"Last error: health probe failed 3 times", "Health probes failed in a row: 3", "Tools changed since kiln was built: added write_file",
			"Advice: Calls to files fail fast until kiln retries at 2030-01-02T04:04:05Z", "\nLast stderr lines:\n    boot ok\n    panic: disk gone\n"}, nil},
		{"backend_status of a healthy backend", "backend_status", map[string]string{"backend_name": "everything"}, false, []string{
			"State: healthy", "Calls: 12, errors: 2, in flight: 1 of at most 10; call timeout 30s", "Last healthy: 2030-01-02T03:05:05Z"},
			[]string{"Advice", "stderr"}},
		{"backend_status of a runtime backend", "backend_status", map[string]string{"backend_name": "dyn"}, false, []string{
			"(http; 1 tool; registered at run time)"}, nil},
		{"backend_status of an unknown backend", "backend_status", map[string]string{"backend_name": "fils"}, true, []string{
			`no backend named "fils"; known backends: files, `}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectPrompt(t, c, tc.prompt, tc.args, tc.wantErr, tc.contains, tc.excludes)
		})
	}
}
