//go:build e2e

package tests

import (
	"slices"
	"testing"
)

// TestSearchAutoSteps: search_tools given only a task that names its steps
// ("..., then ...", "and finally ...") finds the steps itself and returns
// a tool for each, through real clients; the same words without the cues
// are one step and miss one of them.
func TestSearchAutoSteps(t *testing.T) {
	task := "Find the files under the project directory, then echo a message and finally create a knowledge graph relation."
	flat := "find the files under the project directory echo a message create a knowledge graph relation"
	want := []string{"filesystem.search_files", "everything.echo", "memory.create_relations"}
	for _, name := range []string{"mcpgo-stdio", "gosdk-stdio"} {
		t.Run(name, func(t *testing.T) {
			s := clients()[name](t)
			got := searchIDs(t, s, map[string]any{"task_description": task, "limit": 5})
			for _, id := range want {
				if !slices.Contains(got, id) {
					t.Errorf("split task: %v lacks %s", got, id)
				}
			}
			one := searchIDs(t, s, map[string]any{"task_description": flat, "limit": 5})
			if !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(one, id) }) {
				t.Errorf("the unsplit task already finds every step's tool (%v): the test no longer shows what splitting adds", one)
			}
		})
	}
}
