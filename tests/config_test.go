//go:build e2e

package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peerOptions vary the reference-server config a test runs kiln on.
type peerOptions struct {
	// EverythingDelay, when set, makes server-everything start that many
	// seconds late (a shell sleep before exec), so kiln is up first.
	EverythingDelay string
	// FilesystemRoot roots server-filesystem; empty means tests/demo.
	FilesystemRoot string
	// OnlyEverything declares filesystem and memory but disables them.
	OnlyEverything bool
	// Gateway holds extra lines under gateway:, indented two spaces.
	Gateway string
}

// peerConfig writes a kiln config for the three reference servers with
// absolute paths, a temporary state_dir and a temporary memory file, and
// returns its path.
func peerConfig(t testing.TB, o peerOptions) string {
	t.Helper()
	repo := repoRoot(t)
	mods := filepath.Join(repo, "tests/node_modules/@modelcontextprotocol")
	state := t.TempDir()
	if o.FilesystemRoot == "" {
		o.FilesystemRoot = filepath.Join(repo, "tests/demo")
	}
	everything := fmt.Sprintf("command: node\n    args: [%s/server-everything/dist/index.js, stdio]", mods)
	if o.EverythingDelay != "" {
		everything = fmt.Sprintf("command: sh\n    args: [\"-c\", \"sleep %s && exec node %s/server-everything/dist/index.js stdio\"]", o.EverythingDelay, mods)
	}
	enabled := "true"
	if o.OnlyEverything {
		enabled = "false"
	}
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %[1]s
%[6]s
backends:
  everything:
    transport: stdio
    %[3]s
  filesystem:
    transport: stdio
    command: node
    args: [%[2]s/server-filesystem/dist/index.js, %[4]s]
    enabled: %[5]s
  memory:
    transport: stdio
    command: node
    args: [%[2]s/server-memory/dist/index.js]
    enabled: %[5]s
    env:
      MEMORY_FILE_PATH: %[1]s/memory.jsonl
`, state, mods, everything, o.FilesystemRoot, enabled, strings.TrimRight(o.Gateway, "\n"))
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
