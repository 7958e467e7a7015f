package eval

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// synonymEmbedder puts the words of each group on one axis: a stand-in
// for a model that knows "sum" and "arithmetic" are related.
type synonymEmbedder struct{ fail string }

var synonyms = [][]string{
	{"sum", "total", "arithmetic", "calculate", "expression"},
	{"web", "search", "internet", "links"},
	{"file", "write", "save", "notes", "content"},
}

func (s synonymEmbedder) Embed(text string) ([]float32, error) {
	if text == s.fail {
		return nil, errors.New("boom")
	}
	v := make([]float32, len(synonyms))
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		for i, g := range synonyms {
			for _, s := range g {
				if w == s {
					v[i]++
				}
			}
		}
	}
	return v, nil
}

func (synonymEmbedder) Close() error { return nil }

func TestRunSemantic(t *testing.T) {
	tools := filepath.Join("testdata", "mini", "tools.jsonl")
	// No tool says "sum" or "total": only the embedding finds s1. For s2
	// the embedding ties web_search with bing_search (one search word each
	// way) and puts bing_search first by ID; fusion keeps the lexical
	// winner.
	queries := filepath.Join(t.TempDir(), "queries.jsonl")
	if err := os.WriteFile(queries, []byte(`{"id": "s1", "query": "sum a total", "relevant": ["math.calculate"]}
{"id": "s2", "query": "search the web", "relevant": ["web.web_search"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tools, queries, Options{Semantic: &SemanticOptions{Embedder: synonymEmbedder{}, Model: "syn.gguf"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	var names []string
	for _, r := range rep.Rows {
		got[r.Name] = r
		names = append(names, r.Name)
	}
	fusedName := "shipped + semantic, RRF k=60, 30 per side"
	want := map[string]Row{
		"shipped (search.Build)":   {Scores: Scores{Recall5: 0.5, NDCG5: 0.5, MRR10: 0.5}, Tiers: map[string]int{"bm25": 1, "none": 1}},
		"semantic only (syn.gguf)": {Scores: Scores{Recall5: 1, NDCG5: (1 + 1/math.Log2(3)) / 2, MRR10: 0.75}, Tiers: map[string]int{"semantic": 2}},
		fusedName:                  {Scores: Scores{Recall5: 1, NDCG5: 1, MRR10: 1}, Tiers: map[string]int{"bm25": 1, "semantic": 1}},
	}
	for name, w := range want {
		w.Name = name
		if diff := cmp.Diff(w, got[name], cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("row %q of %q (-want +got):\n%s", name, names, diff)
		}
	}
	// The three rows of the task with its steps (split from the task,
	// interleaved, fused) too.
	if len(rep.Rows) != len(want)+3 {
		t.Errorf("rows %q, want %d", names, len(want)+3)
	}
	// Its queries have no steps, which the other note says.
	if len(rep.Notes) != 2 || !strings.Contains(rep.Table(), "Note: The semantic rows measure syn.gguf") {
		t.Errorf("the table does not qualify the semantic rows:\n%s", rep.Table())
	}

	for _, fail := range []string{"sum a total", "calculate Evaluate an arithmetic expression."} {
		if _, err := Run(t.Context(), tools, queries, Options{Semantic: &SemanticOptions{Embedder: synonymEmbedder{fail: fail}, Model: "x"}}); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("embedding %q fails: Run err = %v", fail, err)
		}
	}
}
