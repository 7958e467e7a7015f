//go:build e2e

package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// sandboxConfig is the default config with the filesystem backend rooted in
// a temporary folder and memory writing a temporary file, so calling every
// tool (writes, moves, deletes included) leaves the repository alone.
func sandboxConfig(t *testing.T) (cfgPath, root string) {
	t.Helper()
	root = t.TempDir()
	for name, body := range map[string]string{"a.txt": "alpha\nbeta\n", "b.md": "# title\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return peerConfig(t, peerOptions{FilesystemRoot: root}), root
}

// toolArgs gives each default backend tool arguments a real caller would
// send; order matters for the stateful ones (memory, file moves).
func toolArgs(root string) []struct {
	id   string
	args map[string]any
} {
	p := func(name string) string { return filepath.Join(root, name) }
	entity := map[string]any{"name": "kiln", "entityType": "project", "observations": []string{"compiled"}}
	relation := map[string]any{"from": "kiln", "to": "kiln", "relationType": "fronts"}
	return []struct {
		id   string
		args map[string]any
	}{
		{"everything.echo", map[string]any{"message": "m"}},
		{"everything.get-annotated-message", map[string]any{"messageType": "success", "includeImage": true}},
		{"everything.get-env", map[string]any{}},
		{"everything.get-resource-links", map[string]any{}},
		{"everything.get-resource-reference", map[string]any{}},
		{"everything.get-structured-content", map[string]any{"location": "New York"}},
		{"everything.get-sum", map[string]any{"a": 1, "b": 2}},
		{"everything.get-tiny-image", map[string]any{}},
		// Offline: a data: URI instead of the default https URL.
		{"everything.gzip-file-as-resource", map[string]any{"name": "x.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}},
		{"everything.simulate-research-query", map[string]any{"topic": "gateways"}},
		{"everything.toggle-simulated-logging", map[string]any{}},
		{"everything.toggle-subscriber-updates", map[string]any{}},
		{"everything.trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}},
		// These ask the client; this client declares no sampling,
		// elicitation or roots, so kiln refuses the question and says why
		// (tests/clientreq_test.go answers them).
		{"everything.get-roots-list", map[string]any{}},
		{"everything.trigger-elicitation-request", map[string]any{}},
		{"everything.trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10}},
		{"everything.trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"}},
		{"filesystem.list_allowed_directories", map[string]any{}},
		{"filesystem.create_directory", map[string]any{"path": p("sub")}},
		{"filesystem.write_file", map[string]any{"path": p("sub/c.txt"), "content": "gamma\n"}},
		{"filesystem.edit_file", map[string]any{"path": p("sub/c.txt"), "edits": []any{map[string]any{"oldText": "gamma", "newText": "delta"}}}},
		{"filesystem.read_text_file", map[string]any{"path": p("sub/c.txt")}},
		{"filesystem.read_file", map[string]any{"path": p("a.txt")}},
		{"filesystem.read_multiple_files", map[string]any{"paths": []string{p("a.txt"), p("b.md")}}},
		{"filesystem.read_media_file", map[string]any{"path": p("b.md")}},
		{"filesystem.get_file_info", map[string]any{"path": p("a.txt")}},
		{"filesystem.list_directory", map[string]any{"path": root}},
		{"filesystem.list_directory_with_sizes", map[string]any{"path": root}},
		{"filesystem.directory_tree", map[string]any{"path": root}},
		{"filesystem.search_files", map[string]any{"path": root, "pattern": "*.txt"}},
		{"filesystem.move_file", map[string]any{"source": p("sub/c.txt"), "destination": p("sub/d.txt")}},
		{"memory.create_entities", map[string]any{"entities": []any{entity}}},
		{"memory.create_relations", map[string]any{"relations": []any{relation}}},
		{"memory.add_observations", map[string]any{"observations": []any{map[string]any{"entityName": "kiln", "contents": []string{"fast"}}}}},
		{"memory.read_graph", map[string]any{}},
		{"memory.search_nodes", map[string]any{"query": "kiln"}},
		{"memory.open_nodes", map[string]any{"names": []string{"kiln"}}},
		{"memory.delete_observations", map[string]any{"deletions": []any{map[string]any{"entityName": "kiln", "observations": []string{"fast"}}}}},
		{"memory.delete_relations", map[string]any{"relations": []any{relation}}},
		{"memory.delete_entities", map[string]any{"entityNames": []string{"kiln"}}},
	}
}

// asksClient are the tools that ask the client a question while they run,
// with what this client, which declares no capability, gets: kiln refuses
// sampling and elicitation for it, and its roots are none.
var asksClient = map[string]string{
	"everything.get-roots-list":              "no roots are currently configured",
	"everything.trigger-elicitation-request": `did not declare the "elicitation" capability`,
	"everything.trigger-sampling-request":    `did not declare the "sampling" capability`,
	"everything.trigger-url-elicitation":     `did not declare the "elicitation" capability`,
}

// TestEveryDefaultToolIsCallable calls every tool of every default backend
// through kiln, over stdio and HTTP, and checks each answered without error.
func TestEveryDefaultToolIsCallable(t *testing.T) {
	ms, err := manifest.ReadDir(filepath.Join(repoRoot(t), "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			cfg, root := sandboxConfig(t)
			var s session
			if transport == "stdio" {
				s = newMCPGoStdio(t, "--config", cfg)
			} else {
				s = newMCPGoHTTP(t, startHTTP(t, "--config", cfg))
			}
			called := map[string]bool{}
			for _, tc := range toolArgs(root) {
				called[tc.id] = true
				raw, _ := json.Marshal(map[string]any{"tool": tc.id, "arguments": tc.args})
				r := callReady(t, s, "call_tool_chain", map[string]any{"code": string(raw)})
				if tc.id == "everything.simulate-research-query" {
					// It only runs as an MCP task; kiln must say so plainly.
					if !r.IsError || !strings.Contains(r.Text(), "only runs as an MCP task") {
						t.Errorf("%s: want kiln's task-support refusal, got isError=%v %s", tc.id, r.IsError, r.Text())
					}
					continue
				}
				if want := asksClient[tc.id]; want != "" {
					if !strings.Contains(r.Text(), want) {
						t.Errorf("%s: want the refusal %q, got isError=%v %s", tc.id, want, r.IsError, r.Text())
					}
					continue
				}
				if r.IsError {
					t.Errorf("%s: isError: %s", tc.id, r.Text())
				} else if len(r.Content) == 0 && len(r.Structured) == 0 {
					t.Errorf("%s: empty result", tc.id)
				}
			}
			for _, m := range ms {
				for _, tool := range m.Tools {
					if id := m.Backend + "." + tool.Name; !called[id] {
						t.Errorf("%s is in manifests/ but this test does not call it; add it to toolArgs", id)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(root, "sub", "d.txt")); err != nil {
				t.Errorf("move_file did not reach the backend's folder: %v", err)
			}
			if strings.Contains(root, repoRoot(t)) {
				t.Fatal("the test folder must not be inside the repository")
			}
		})
	}
}
