//go:build semantic

package semantic

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/search/benchdata"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic/semantictest"
)

// TestSearcherLlama fuses real llama.cpp embeddings (the tiny model) with
// the lexical index: the fused list is RRF of the two rankings, and a
// tool added at run time reaches the semantic side.
func TestSearcherLlama(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	e := mustOpen(t, path, sum, 1)
	var docs []search.Doc
	for _, tl := range tools {
		b, n, _ := strings.Cut(tl.id, ".")
		docs = append(docs, search.NewDoc(b, n, "", tl.desc, nil))
	}
	ix, v := frozen(t, e, docs)
	s, err := NewSearcher(ix, v, e, SearcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"weather forecast for a city", "write new content to a file", "record staged changes"} {
		var lex []string
		for _, h := range ix.Search(q, search.Options{Limit: MinCandidates}) {
			lex = append(lex, h.ID)
		}
		hits, err := v.Query(e, q, MinCandidates)
		if err != nil {
			t.Fatal(err)
		}
		var sem []string
		for _, h := range hits {
			if h.Score > 0 {
				sem = append(sem, h.ID)
			}
		}
		var got []string
		for _, h := range s.Search(q, search.Options{Limit: len(tools)}) {
			got = append(got, h.ID)
		}
		if diff := cmp.Diff(Fuse(lex, sem, RRFK), got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q: fused ranking (-RRF of both +Search):\n%s", q, diff)
		}
	}

	added := s.With([]search.Doc{search.NewDoc("notes", "take_note", "", "Record a message for later.", nil)})
	// Its own text embeds to its own vector: cosine 1, first.
	qv, err := e.Embed(ToolText("take_note", "Record a message for later."))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(added.nearest(qv, 1, nil)); !cmp.Equal(got, []string{"notes.take_note"}) {
		t.Errorf("nearest to a run-time tool's own text = %v, want notes.take_note", got)
	}
	if got := ids(s.nearest(qv, len(tools), nil)); cmp.Equal(got[:1], []string{"notes.take_note"}) {
		t.Error("With changed the Searcher it was called on")
	}
}

// benchDocs replays the bench fleets (LiveMCPBench, ToolBench) with
// renamed backends until there are n tools, as runtime/search's
// benchmarks do.
func benchDocs(b *testing.B, n int) []search.Doc {
	b.Helper()
	fleet := benchdata.Fleet(b, n)
	out := make([]search.Doc, len(fleet))
	for i, t := range fleet {
		out[i] = search.NewDoc(t.Server, t.Name, t.Title, t.Description, t.InputSchema)
	}
	return out
}

// BenchmarkSearcher measures one search_tools ranking in a SEMANTIC=1
// build with the tiny test model (32 dimensions): the lexical tiers, one
// query embedding, cosine over every tool and the fusion. "lexical" is the
// index alone and "embed" the query embedding alone, for comparison. A
// 384-dimension model such as MiniLM costs its embedding time
// (BenchmarkEmbed) plus 12x the cosine work.
func BenchmarkSearcher(b *testing.B) {
	for _, n := range []int{500, 5000} {
		docs := benchDocs(b, n)
		var texts []string
		for _, d := range docs[:min(len(docs), 3000)] {
			texts = append(texts, ToolText(d.Name, d.Description))
		}
		// The vocabulary of the tools' own words, so queries tokenize as
		// they would with a real model's 30k WordPiece vocabulary.
		path := filepath.Join(b.TempDir(), "tiny.gguf")
		sum, err := semantictest.Tiny.WriteModel(path, texts)
		if err != nil {
			b.Fatal(err)
		}
		e := mustOpen(b, path, sum, 1)
		ix, v := frozen(b, e, docs)
		s, err := NewSearcher(ix, v, e, SearcherOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []struct{ name, text string }{
			{"short", "search the web for news"},
			{"task", "Read the sales data under /root/excel/sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png"},
		} {
			b.Run(fmt.Sprintf("tools=%d/%s/fused", n, q.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if len(s.Search(q.text, search.Options{})) == 0 {
						b.Fatal("no hits")
					}
				}
			})
			b.Run(fmt.Sprintf("tools=%d/%s/embed", n, q.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Embed(q.text); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("tools=%d/%s/lexical", n, q.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ix.Search(q.text, search.Options{Limit: MinCandidates})
				}
			})
		}
	}
}
