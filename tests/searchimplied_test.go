//go:build e2e

package tests

import (
	"slices"
	"strings"
	"testing"
)

// TestSearchImpliedFile: search_tools, through real clients, lists the
// tool of the step a named file implies, from the index frozen into
// generated/: no word of these tasks names a file tool, yet saving to a
// .md path needs the file writer and reading one the reader, which the
// same tasks without the path do not list.
func TestSearchImpliedFile(t *testing.T) {
	for _, name := range []string{"mcpgo-stdio", "gosdk-stdio"} {
		t.Run(name, func(t *testing.T) {
			s := clients()[name](t)
			for _, tc := range []struct{ task, path, want string }{
				{"Find the entities in the knowledge graph and save them to PATH", "/tmp/notes/graph.md", "filesystem.write_file"},
				{"Add the people listed in PATH to the knowledge graph", "/tmp/notes/team.md", "filesystem.read_file"},
			} {
				q := strings.Replace(tc.task, "PATH", tc.path, 1)
				got := searchIDs(t, s, map[string]any{"task_description": q, "limit": 5})
				if i := slices.Index(got, tc.want); i < 0 || i > 2 {
					t.Errorf("search_tools(%q) = %v, want %s in the first three", q, got, tc.want)
				}
				q = strings.Replace(tc.task, "PATH", "my notes", 1)
				if got := searchIDs(t, s, map[string]any{"task_description": q, "limit": 5}); slices.Contains(got, tc.want) {
					t.Errorf("search_tools(%q) = %v: %s listed without a path", q, got, tc.want)
				}
			}
		})
	}
}
