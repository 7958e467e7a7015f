//go:build e2e

package tests

import (
	"slices"
	"testing"
)

// TestSearchSynonyms: search_tools, through real clients, finds a tool by
// a word its text lacks but a synonym of the word it has, from the index
// frozen into generated/: no tool says "picture", and "find" is
// memory.search_nodes' "search" (without synonyms open_nodes ranks first).
func TestSearchSynonyms(t *testing.T) {
	for _, name := range []string{"mcpgo-stdio", "gosdk-stdio"} {
		t.Run(name, func(t *testing.T) {
			s := clients()[name](t)
			for q, want := range map[string]string{
				"picture":                           "everything.get-tiny-image",
				"find nodes in the knowledge graph": "memory.search_nodes",
			} {
				got := searchIDs(t, s, map[string]any{"task_description": q, "limit": 1})
				if !slices.Equal(got, []string{want}) {
					t.Errorf("search_tools(%q) = %v, want [%s]", q, got, want)
				}
			}
		})
	}
}
