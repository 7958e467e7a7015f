package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/search/static"
)

// TestRunStatic: --vectors adds the static tier's rows (alone, then each
// fusion on the task and both step paths) after the lexical ones, from a
// vector file the test writes.
func TestRunStatic(t *testing.T) {
	dir := t.TempDir()
	vecs := filepath.Join(dir, "vectors.txt")
	if err := os.WriteFile(vecs, []byte("the 1 1 1\nsum 1 0 0\narithmetic 0.9 0.1 0\nweb 0 1 0\nsearch 0.1 0.9 0\nfile 0 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := static.Read(vecs)
	if err != nil {
		t.Fatal(err)
	}
	queries := filepath.Join(dir, "queries.jsonl")
	if err := os.WriteFile(queries, []byte(`{"id": "s1", "query": "sum", "relevant": ["math.calculate"]}
{"id": "s2", "query": "search the web", "relevant": ["web.web_search"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), filepath.Join("testdata", "mini", "tools.jsonl"), queries,
		Options{Static: &StaticOptions{Raw: raw, Source: "vectors.txt", Top: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rep.Rows {
		if strings.Contains(r.Name, "static") {
			names = append(names, r.Name)
		}
	}
	if len(names) != 1+3*3 || !strings.HasPrefix(names[0], "static vectors alone") {
		t.Fatalf("static rows: %q", names)
	}
	for _, r := range rep.Rows {
		if strings.HasPrefix(r.Name, "static vectors alone") && r.MRR10 == 0 {
			t.Errorf("the vectors alone found nothing: %+v", r)
		}
	}
}
