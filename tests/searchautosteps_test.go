//go:build e2e

package tests

import (
	"slices"
	"testing"
)

// TestSearchAutoSteps: search_tools given only a task that names its steps
// ("..., then ...", "and finally ...") finds the steps itself, through real
// clients: the task's best tool still leads, and one of a step's best
// tools that the task alone ranks too low joins the answer. The task alone is asked
// for by passing it as its only step, which SearchSteps drops as a repeat.
func TestSearchAutoSteps(t *testing.T) {
	// Chosen with a margin: the step's second best tool ranks 10th for the
	// task alone and 3rd once split (the first task here, "find the files
	// ..., then echo ... and finally ...", left it one place short on some
	// machines and one place in on others).
	task := "Store facts about the user in the knowledge graph memory, then print the directory tree of the project."
	step := "print the directory tree of the project"
	for _, name := range []string{"mcpgo-stdio", "gosdk-stdio"} {
		t.Run(name, func(t *testing.T) {
			s := clients()[name](t)
			split := searchIDs(t, s, map[string]any{"task_description": task, "limit": 6})
			alone := searchIDs(t, s, map[string]any{"task_description": task, "steps": []string{task}, "limit": 6})
			stepBest := searchIDs(t, s, map[string]any{"task_description": step, "limit": 2})
			if len(split) == 0 || len(alone) == 0 || len(stepBest) == 0 {
				t.Fatalf("no hits: split %v, alone %v, step %v", split, alone, stepBest)
			}
			if split[0] != alone[0] {
				t.Errorf("split task leads with %s, want the task's best %s (split %v)", split[0], alone[0], split)
			}
			added := slices.DeleteFunc(slices.Clone(stepBest), func(id string) bool { return slices.Contains(alone, id) })
			if len(added) == 0 {
				t.Fatalf("the task alone already finds the step's best tools %v (%v): the test no longer shows what splitting adds", stepBest, alone)
			}
			if !slices.ContainsFunc(added, func(id string) bool { return slices.Contains(split, id) }) {
				t.Errorf("split task %v has none of the step's best tools %v that the task alone (%v) lacks", split, added, alone)
			}
		})
	}
}
