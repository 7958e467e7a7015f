package backend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// TestWorkspaceBackend dials a transport: workspace backend the way
// dispatch and kiln-gen record do, in process, and checks it behaves like
// any other backend: a handshake, a tool list with schemas, and calls
// whose results come back as sent.
func TestWorkspaceBackend(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Backend{Name: "repo", Transport: config.TransportWorkspace, Enabled: true,
		Workspace: &config.Workspace{Root: root, MaxOutput: 1000, StateDir: t.TempDir(),
			Bash: config.Bash{Timeout: time.Minute, MaxTimeout: time.Minute}}}
	conn, err := DialTimeout(t.Context(), cfg, 10*time.Second, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := conn.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
		if !json.Valid(tool.InputSchema) || !strings.Contains(string(tool.InputSchema), `"type":"object"`) {
			t.Errorf("%s schema = %s", tool.Name, tool.InputSchema)
		}
	}
	want := "Read Write Edit Glob Grep Bash BashOutput KillShell run_tests run_lint run_typecheck snapshot_create snapshot_list snapshot_diff snapshot_restore snapshot_delete edit_function_body insert_after_method change_function_signature secrets_available render_mermaid find_definition find_references workspace_symbols document_symbols hover rename_symbol diagnostics"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tools = %s\nwant %s", got, want)
	}
	// What the registry holds from the start (workspace.Manifest) is what
	// the workspace lists once open: no drift, nothing replaced.
	listed, _ := json.Marshal(m.Tools)
	static, _ := json.Marshal(workspace.Manifest(cfg).Tools)
	if string(listed) != string(static) {
		t.Errorf("live tools differ from workspace.Manifest:\n%s\n%s", listed, static)
	}
	if m.Server.Name != "kiln-workspace" || m.Transport != config.TransportWorkspace {
		t.Errorf("server %q transport %q", m.Server.Name, m.Transport)
	}
	res, err := conn.CallTool(t.Context(), "Read", json.RawMessage(`{"file_path":"a.txt"}`), CallOptions{})
	if err != nil || res.IsError || res.TextContent() != "     1\thello\n" {
		t.Fatalf("Read = %+v, %v", res, err)
	}
	res, err = conn.CallTool(t.Context(), "Nope", nil, CallOptions{})
	if err != nil || !res.IsError || !strings.Contains(res.TextContent(), "unknown tool") {
		t.Fatalf("Nope = %+v, %v", res, err)
	}
	if err := conn.Probe(t.Context()); err != nil {
		t.Errorf("Probe: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := conn.CallTool(t.Context(), "Read", json.RawMessage(`{"file_path":"a.txt"}`), CallOptions{}); err == nil {
		t.Error("a call after Close succeeded")
	}
}
