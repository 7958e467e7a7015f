package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStateDirVar: ${KILN_STATE_DIR} is the absolute state folder in a
// backend's settings, whatever the folder kiln runs from, ahead of any
// variable of that name in the environment, and is not a key a tool needs.
func TestStateDirVar(t *testing.T) {
	const text = `
version: 1
gateway:
  state_dir: var/kiln
backends:
  memory:
    command: node
    args: ["${KILN_STATE_DIR}/x"]
    env:
      MEMORY_FILE_PATH: ${KILN_MEMORY_FILE:-${KILN_STATE_DIR}/memory.jsonl}
`
	tests := []struct {
		name     string
		vars     map[string]string
		stateDir func(dir string) string
		memory   func(dir string) string
	}{
		{"relative state_dir resolves against the config's folder", nil,
			func(dir string) string { return filepath.Join(dir, "var/kiln") },
			func(dir string) string { return filepath.Join(dir, "var/kiln/memory.jsonl") }},
		{"the environment cannot stand in for it", map[string]string{"KILN_STATE_DIR": "/elsewhere"},
			func(dir string) string { return filepath.Join(dir, "var/kiln") },
			func(dir string) string { return filepath.Join(dir, "var/kiln/memory.jsonl") }},
		{"it follows an override of state_dir", map[string]string{"KILN_GATEWAY_STATE_DIR": "/srv/kiln"},
			func(string) string { return "/srv/kiln" },
			func(string) string { return "/srv/kiln/memory.jsonl" }},
		{"an explicit variable still wins over the default", map[string]string{"KILN_MEMORY_FILE": "/data/m.jsonl"},
			func(dir string) string { return filepath.Join(dir, "var/kiln") },
			func(string) string { return "/data/m.jsonl" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := LoadBytesWith([]byte(text), "kiln.yaml", dir, LoadOptions{Getenv: env(tt.vars)})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := c.Backend("memory")
			got := []string{c.Gateway.StateDir, b.Env["MEMORY_FILE_PATH"], b.Args[0]}
			want := []string{tt.stateDir(dir), tt.memory(dir), tt.stateDir(dir) + "/x"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state dir, MEMORY_FILE_PATH, args[0] (-want +got):\n%s", diff)
			}
			for _, v := range b.Vars {
				if v.Name == StateDirVar {
					t.Errorf("Vars lists %s, which is kiln's own: %+v", StateDirVar, b.Vars)
				}
			}
		})
	}
}

func TestStateDirVarOutsideBackends(t *testing.T) {
	expectProblems(t, "version: 1\ngateway:\n  name: k-${KILN_STATE_DIR}\n", nil, []string{
		"kiln.yaml:3: gateway.name: ${KILN_STATE_DIR} is kiln's state folder, known once the gateway section is read; use it in backends' settings, not in gateway"})
}

// TestRepoConfigKeepsMemoryInStateDir loads the repository's kiln.yaml
// from another folder: server-memory's file must be an absolute path in
// kiln's state folder, since a relative one lands in node_modules.
func TestRepoConfigKeepsMemoryInStateDir(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	c, err := LoadWith(filepath.Join(repo, "kiln.yaml"), LoadOptions{Getenv: env(nil), NoDotEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := c.Backend("memory")
	if !ok {
		t.Fatal("kiln.yaml declares no memory backend")
	}
	if got, want := b.Env["MEMORY_FILE_PATH"], filepath.Join(repo, ".kiln", "memory.jsonl"); got != want {
		t.Errorf("MEMORY_FILE_PATH = %q, want %q", got, want)
	}
}
