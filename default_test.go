package kiln

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/config"
)

// TestDefaultConfigWorksAnywhere checks the config compiled into the
// binary against the repository's: the same backends, the versions
// tests/package.json pins (those manifests/ records), nothing pointing
// into tests/node_modules, and server-memory's file in the state folder.
func TestDefaultConfigWorksAnywhere(t *testing.T) {
	repo, err := config.LoadWith("kiln.yaml", config.LoadOptions{NoDotEnv: true, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	def, err := config.LoadBytesWith(DefaultConfig, "embedded kiln.default.yaml", wd, config.LoadOptions{NoDotEnv: true, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var names, repoNames []string
	for _, b := range def.Backends {
		names = append(names, b.Name)
	}
	for _, b := range repo.Backends {
		repoNames = append(repoNames, b.Name)
	}
	if diff := cmp.Diff(repoNames, names); diff != "" {
		t.Errorf("backends (-kiln.yaml +kiln.default.yaml):\n%s", diff)
	}

	raw, err := os.ReadFile("tests/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	for _, b := range def.Backends {
		spec := "@modelcontextprotocol/server-" + b.Name
		want := spec + "@" + pkg.Dependencies[spec]
		if b.Command != "npx" || !slices.Contains(b.Args, want) {
			t.Errorf("backend %s runs %s %v; want npx with %s (tests/package.json's pin)", b.Name, b.Command, b.Args, want)
		}
		for _, a := range append([]string{b.Command, b.Cwd}, b.Args...) {
			if strings.Contains(a, "node_modules") {
				t.Errorf("backend %s points into node_modules: %q", b.Name, a)
			}
		}
	}
	mem, _ := def.Backend("memory")
	if got, want := mem.Env["MEMORY_FILE_PATH"], filepath.Join(wd, ".kiln", "memory.jsonl"); got != want {
		t.Errorf("MEMORY_FILE_PATH = %q, want %q", got, want)
	}
}

func noEnv(string) (string, bool) { return "", false }
