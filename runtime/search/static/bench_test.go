package static_test

import (
	"fmt"
	"hash/fnv"
	"os"
	"testing"

	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/benchdata"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// benchRaw is the word-vector set the benchmarks cut: the file named by
// KILN_VECTORS (make vectors puts wink-embeddings under .cache/vectors),
// else a synthetic set of the same shape (100 dimensions, the fleet's
// words plus 30,000 others), so timings hold either way.
func benchRaw(b *testing.B, texts []string) *static.Raw {
	b.Helper()
	if p := os.Getenv("KILN_VECTORS"); p != "" {
		r, err := static.Read(p)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	r := &static.Raw{Dim: 100}
	seen := map[string]bool{}
	add := func(w string) {
		if seen[w] {
			return
		}
		seen[w] = true
		r.Words = append(r.Words, w)
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		for range r.Dim {
			x = x*6364136223846793005 + 1442695040888963407
			r.Vecs = append(r.Vecs, float32(int8(x>>56))/128)
		}
	}
	for i := range 30000 {
		add(fmt.Sprintf("w%d", i))
	}
	for _, s := range texts {
		for _, w := range static.Words(s) {
			add(w)
		}
	}
	return r
}

type tier struct {
	docs  []search.Doc
	lex   *search.Index
	table []byte
}

func benchTier(b *testing.B, n int) tier {
	b.Helper()
	fleet := benchdata.Fleet(b, n)
	t := tier{}
	var texts []string
	for _, f := range fleet {
		d := search.NewDoc(f.Server, f.Name, f.Title, f.Description, f.InputSchema)
		t.docs = append(t.docs, d)
		texts = append(texts, semantic.ToolText(d.Name, d.Description))
	}
	t.lex = search.Build(t.docs)
	var err error
	if t.table, err = static.CutFor(benchRaw(b, texts), "bench", "", texts, static.DefaultTop).MarshalBinary(); err != nil {
		b.Fatal(err)
	}
	return t
}

// open is what kiln does at start with a compiled table: decode it, embed
// every compiled tool, build the searcher.
func (t tier) open(b *testing.B, f semantic.Fusion) *semantic.Searcher {
	tb, err := static.Load(t.table)
	if err != nil {
		b.Fatal(err)
	}
	e := static.NewEmbedder(tb)
	ids, texts := make([]string, t.lex.Len()), make([]string, t.lex.Len())
	for i := range t.lex.Len() {
		d := t.lex.Doc(i)
		ids[i], texts[i] = d.ID, semantic.ToolText(d.Name, d.Description)
	}
	v, err := semantic.BuildVectors(e, ids, texts, "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	s, err := semantic.NewSearcher(t.lex, v, e, semantic.SearcherOptions{Fusion: f, Weight: static.DefaultWeight})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

var queries = map[string]string{
	"short": "search the web for news",
	"task":  "Read the sales data under /root/excel/sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png",
}

// BenchmarkStaticSearch sets the tier's fusions beside the lexical index
// alone (search.BenchmarkSearch's queries).
func BenchmarkStaticSearch(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		t := benchTier(b, n)
		searchers := map[string]func(string, search.Options) []search.Hit{"off": t.lex.Search}
		for _, f := range []semantic.Fusion{semantic.FuseRerank, semantic.FuseLinear, semantic.FuseRRF} {
			searchers[f.String()] = t.open(b, f).Search
		}
		for _, name := range []string{"off", "rerank", "linear", "rrf"} {
			for _, q := range []string{"short", "task"} {
				b.Run(fmt.Sprintf("tools=%d/%s/%s", n, name, q), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						searchers[name](queries[q], search.Options{})
					}
				})
			}
		}
	}
}

// BenchmarkStaticOpen is the tier's start-up cost on top of loading the
// lexical index: decoding the table and embedding every compiled tool.
func BenchmarkStaticOpen(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		t := benchTier(b, n)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t.open(b, semantic.FuseRerank)
			}
			b.ReportMetric(float64(len(t.table)), "table-bytes")
		})
	}
}
