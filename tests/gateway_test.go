//go:build e2e

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

var metaTools = []string{
	"call_tool_chain", "deregister_manual", "get_required_keys_for_tool", "list_tools_meta",
	"register_manual", "search_tools", "tool_info",
}

// clients lists every real client and transport the suite runs through.
func clients() map[string]func(t *testing.T) session {
	return map[string]func(t *testing.T) session{
		"mcpgo-stdio": func(t *testing.T) session { return newMCPGoStdio(t) },
		"mcpgo-http":  func(t *testing.T) session { return newMCPGoHTTP(t, startHTTP(t)) },
		"mcpgo-sse":   func(t *testing.T) session { return newMCPGoSSE(t, startHTTP(t)) },
		"gosdk-stdio": func(t *testing.T) session { return newSDKStdio(t) },
		"gosdk-http":  func(t *testing.T) session { return newSDKHTTP(t, startHTTP(t)) },
	}
}

func TestGateway(t *testing.T) {
	manifests, err := manifest.ReadDir(filepath.Join(repoRoot(t), "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	for name, connect := range clients() {
		t.Run(name, func(t *testing.T) {
			s := connect(t)
			t.Run("lists exactly the meta-tools", func(t *testing.T) { testMetaTools(t, s) })
			t.Run("list_tools_meta pages through every tool", func(t *testing.T) { testListAll(t, s, manifests) })
			t.Run("tool_info full returns the recorded schema", func(t *testing.T) { testToolInfoFull(t, s, manifests) })
			t.Run("search_tools finds get-sum", func(t *testing.T) { testSearch(t, s) })
			t.Run("tier 1 echo", func(t *testing.T) { testEcho(t, s) })
			t.Run("tier 1 get-sum", func(t *testing.T) { testSum(t, s) })
			t.Run("tier 1 filesystem read", func(t *testing.T) { testFileRead(t, s) })
			t.Run("backend isError passes through", func(t *testing.T) { testBackendError(t, s) })
			t.Run("image content passes through", func(t *testing.T) { testImage(t, s) })
			t.Run("structuredContent passes through", func(t *testing.T) { testStructured(t, s) })
			t.Run("invalid arguments are explained", func(t *testing.T) { testInvalidArgs(t, s) })
			t.Run("required keys", func(t *testing.T) { testRequiredKeys(t, s) })
		})
	}
}

func testMetaTools(t *testing.T, s session) {
	got, err := s.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff(metaTools, got); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
}

func chainJSON(tool string, args any) map[string]any {
	raw, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	return map[string]any{"code": string(raw)}
}

func testListAll(t *testing.T, s session, ms []*manifest.Manifest) {
	var want []string
	for _, m := range ms {
		for _, tool := range m.Tools {
			want = append(want, m.Backend+"."+tool.Name)
		}
	}
	slices.Sort(want)
	var got []string
	cursor := ""
	for page := 0; page < 100; page++ {
		args := map[string]any{"page_size": 7}
		if cursor != "" {
			args["cursor"] = cursor
		}
		r := callReady(t, s, "list_tools_meta", args)
		if r.IsError {
			t.Fatalf("list_tools_meta: %s", r.Text())
		}
		var body struct {
			Tools []struct {
				Tool string `json:"tool"`
			} `json:"tools"`
			Total      int    `json:"total"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(r.Text()), &body); err != nil {
			t.Fatalf("list_tools_meta answer is not JSON: %v\n%s", err, r.Text())
		}
		if len(body.Tools) > 7 {
			t.Fatalf("page has %d tools, page_size was 7", len(body.Tools))
		}
		if body.Total != len(want) {
			t.Errorf("total = %d, want %d", body.Total, len(want))
		}
		for _, e := range body.Tools {
			got = append(got, e.Tool)
		}
		if cursor = body.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools listed across pages (-want +got):\n%s", diff)
	}
}

func testToolInfoFull(t *testing.T, s session, ms []*manifest.Manifest) {
	for _, m := range ms {
		tool := m.Tools[0]
		r := callReady(t, s, "tool_info", map[string]any{"tool_name": m.Backend + "." + tool.Name, "detail": "full"})
		if r.IsError {
			t.Fatalf("tool_info: %s", r.Text())
		}
		var body struct {
			Tool        string          `json:"tool"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal([]byte(r.Text()), &body); err != nil {
			t.Fatal(err)
		}
		want, _ := manifest.Canonical(tool.InputSchema)
		got, _ := manifest.Canonical(body.InputSchema)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s.%s input_schema (-recorded +served):\n%s", m.Backend, tool.Name, diff)
		}
	}
}

func testSearch(t *testing.T, s session) {
	r := callReady(t, s, "search_tools", map[string]any{"task_description": "add two numbers together", "limit": 3})
	if r.IsError || !strings.Contains(r.Text(), "everything.get-sum") {
		t.Errorf("search_tools(add two numbers) did not return everything.get-sum:\n%s", r.Text())
	}
}

func testEcho(t *testing.T, s session) {
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "hello kiln"}))
	if r.IsError || !strings.Contains(r.Text(), "hello kiln") {
		t.Errorf("echo: isError=%v text=%q", r.IsError, r.Text())
	}
}

func testSum(t *testing.T, s session) {
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.get-sum", map[string]any{"a": 2, "b": 40}))
	if r.IsError || !strings.Contains(r.Text(), "42") {
		t.Errorf("get-sum: isError=%v text=%q", r.IsError, r.Text())
	}
}

func testFileRead(t *testing.T, s session) {
	path := filepath.Join(repoRoot(t), "tests/demo/notes.txt")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := callReady(t, s, "call_tool_chain", chainJSON("filesystem.read_text_file", map[string]any{"path": path}))
	if r.IsError || !strings.Contains(r.Text(), strings.TrimSpace(string(want))) {
		t.Errorf("read_text_file: isError=%v text=%q", r.IsError, r.Text())
	}
}

func testBackendError(t *testing.T, s session) {
	// server-filesystem refuses paths outside its root with isError: true;
	// kiln must pass that through, not flatten it into a success.
	r := callReady(t, s, "call_tool_chain", chainJSON("filesystem.read_text_file", map[string]any{"path": "/etc/hostname"}))
	if !r.IsError {
		t.Errorf("read outside the root: isError=false, want true; text=%q", r.Text())
	}
}

func testImage(t *testing.T, s session) {
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.get-tiny-image", map[string]any{}))
	if r.IsError {
		t.Fatalf("get-tiny-image: %s", r.Text())
	}
	for _, c := range r.Content {
		if c["type"] == "image" && c["mimeType"] == "image/png" && c["data"] != "" {
			return
		}
	}
	t.Errorf("no image/png content block in %v", r.Content)
}

func testStructured(t *testing.T, s session) {
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.get-structured-content", map[string]any{"location": "New York"}))
	if r.IsError {
		t.Fatalf("get-structured-content: %s", r.Text())
	}
	var v map[string]any
	if err := json.Unmarshal(r.Structured, &v); err != nil || len(v) == 0 {
		t.Errorf("structuredContent = %s, want a non-empty object", r.Structured)
	}
}

func testInvalidArgs(t *testing.T, s session) {
	r := callReady(t, s, "call_tool_chain", chainJSON("everything.get-sum", map[string]any{"a": "two"}))
	if !r.IsError {
		t.Fatalf("get-sum with a string: isError=false, want true")
	}
	for _, want := range []string{"/a", "number", "get-sum"} {
		if !strings.Contains(r.Text(), want) {
			t.Errorf("error %q does not mention %q", r.Text(), want)
		}
	}
}

func testRequiredKeys(t *testing.T, s session) {
	r := callReady(t, s, "get_required_keys_for_tool", map[string]any{"tool_name": "memory.read_graph"})
	if r.IsError || !strings.Contains(r.Text(), "KILN_MEMORY_FILE") {
		t.Errorf("get_required_keys_for_tool(memory.read_graph) = %q, want KILN_MEMORY_FILE listed", r.Text())
	}
}
