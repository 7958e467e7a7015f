//go:build e2e

package tests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMemoryStaysInStateDir runs kiln on the repository's kiln.yaml from
// another folder and stores an entity through the real server-memory: its
// file lands in kiln's state folder, not inside node_modules (where
// server-memory resolves a relative MEMORY_FILE_PATH).
func TestMemoryStaysInStateDir(t *testing.T) {
	repo := repoRoot(t)
	state := t.TempDir()
	dist := filepath.Join(repo, "tests/node_modules/@modelcontextprotocol/server-memory/dist")
	entity := "kiln-statedir-" + filepath.Base(state)

	cmd := exec.Command(kilnBin(t), "serve", "--config", filepath.Join(repo, "kiln.yaml"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutEnv(os.Environ(), "KILN_MEMORY_FILE", "KILN_CONFIG"), "KILN_GATEWAY_STATE_DIR="+state)
	cmd.Stderr = testWriter{t, "kiln"}
	s := connectSDK(t, &sdk.CommandTransport{Command: cmd})

	r := callReady(t, s, "call_tool_chain", chainJSON("memory.create_entities", map[string]any{
		"entities": []any{map[string]any{"name": entity, "entityType": "test", "observations": []string{"stored"}}},
	}))
	if r.IsError {
		t.Fatalf("memory.create_entities: %s", r.Text())
	}
	data, err := os.ReadFile(filepath.Join(state, "memory.jsonl"))
	if err != nil || !strings.Contains(string(data), entity) {
		t.Errorf("state folder's memory.jsonl lacks the entity (%v):\n%s", err, data)
	}
	err = filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), entity) {
			t.Errorf("server-memory wrote into node_modules: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
