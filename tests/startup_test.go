//go:build e2e

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slowConfig declares the compiled backends with "everything" delayed by a
// shell sleep before it execs the real server, so kiln is observably up
// while that backend is still starting.
func slowConfig(t *testing.T, delay string) string {
	t.Helper()
	root := repoRoot(t)
	everything := filepath.Join(root, "tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %[1]s
backends:
  everything:
    transport: stdio
    command: sh
    args: ["-c", "sleep %[2]s && exec node %[3]s stdio"]
  filesystem:
    transport: stdio
    command: node
    args: [%[4]s, %[5]s]
    enabled: false
  memory:
    transport: stdio
    command: node
    args: [%[6]s]
    enabled: false
`, t.TempDir(), delay, everything,
		filepath.Join(root, "tests/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
		filepath.Join(root, "tests/demo"),
		filepath.Join(root, "tests/node_modules/@modelcontextprotocol/server-memory/dist/index.js"))
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDiscoveryBeforeBackendsConnect(t *testing.T) {
	s := newMCPGoStdio(t, "--config", slowConfig(t, "4"))

	// Discovery answers from the compiled registry at once.
	r, err := s.Call(t.Context(), "search_tools", map[string]any{"task_description": "echo a message"})
	if err != nil || r.IsError || !strings.Contains(r.Text(), "everything.echo") {
		t.Fatalf("search_tools while backends start: err=%v %q", err, r.Text())
	}
	// A call to the starting backend says so plainly instead of waiting
	// for it: were it waiting, the 4 s backend would have answered "hi".
	r, err = s.Call(t.Context(), "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), `backend "everything" is still starting, retry in a moment`) {
		t.Fatalf("call to a starting backend: isError=%v %q", r.IsError, r.Text())
	}
	// A disabled backend is explained, not hidden.
	r, _ = s.Call(t.Context(), "call_tool_chain", chainJSON("filesystem.list_allowed_directories", map[string]any{}))
	if !r.IsError || !strings.Contains(r.Text(), "disabled") {
		t.Errorf("call to a disabled backend: %q", r.Text())
	}
	// And once it has connected, the same call succeeds.
	r = callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "hi"}))
	if r.IsError || !strings.Contains(r.Text(), "hi") {
		t.Errorf("call after start: %q", r.Text())
	}
}
