//go:build e2e

package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSearchSteps: a task of several steps, given to search_tools with its
// steps, returns each step's best tool first, in step order, through real
// clients; the task alone, at the same limit, misses some of them.
func TestSearchSteps(t *testing.T) {
	task := "add two numbers, remember the result in the knowledge graph and write it to a file"
	steps := []string{"add two numbers", "create entities in the knowledge graph", "write a new file"}
	want := []string{"everything.get-sum", "memory.create_entities", "filesystem.write_file"}
	for _, name := range []string{"mcpgo-stdio", "gosdk-stdio"} {
		t.Run(name, func(t *testing.T) {
			s := clients()[name](t)
			with := searchIDs(t, s, map[string]any{"task_description": task, "steps": steps, "limit": 3})
			if !slices.Equal(with, want) {
				t.Errorf("with steps: %v, want %v", with, want)
			}
			without := searchIDs(t, s, map[string]any{"task_description": task, "limit": 3})
			if slices.Equal(without, want) {
				t.Errorf("the task alone already finds %v: the test no longer shows what steps add", without)
			}
			r := callReady(t, s, "search_tools", map[string]any{"task_description": task, "steps": []string{"ok", ""}})
			if !r.IsError || !strings.Contains(r.Text(), "/steps/1") {
				t.Errorf("an empty step: isError=%v %s", r.IsError, r.Text())
			}
		})
	}
}

func searchIDs(t *testing.T, s session, args map[string]any) []string {
	t.Helper()
	r := callReady(t, s, "search_tools", args)
	if r.IsError {
		t.Fatalf("search_tools(%v): %s", args, r.Text())
	}
	var body struct {
		Results []struct {
			Tool string `json:"tool"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.Text()), &body); err != nil {
		t.Fatalf("search_tools answer is not JSON: %v\n%s", err, r.Text())
	}
	var ids []string
	for _, h := range body.Results {
		ids = append(ids, h.Tool)
	}
	return ids
}
