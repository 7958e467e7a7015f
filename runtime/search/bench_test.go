package search

import (
	"fmt"
	"testing"

	"github.com/kilnmcp/kiln/runtime/search/benchdata"
	"github.com/kilnmcp/kiln/runtime/usecount"
)

// benchDocs replays the tool-retrieval benchmark fleets (LiveMCPBench's 527
// MCP tools and ToolBench's 2,479 APIs) with renamed backends until there
// are n tools.
func benchDocs(b *testing.B, n int) []Doc {
	b.Helper()
	fleet := benchdata.Fleet(b, n)
	out := make([]Doc, len(fleet))
	for i, t := range fleet {
		out[i] = NewDoc(t.Server, t.Name, t.Title, t.Description, t.InputSchema)
	}
	return out
}

var benchQueries = map[string]string{
	"short": "search the web for news",
	"task":  "Read the sales data under /root/excel/sales.xlsx, plot it as a bar chart by month and save it in /root/figs/sale.png",
	"tier2": "websrch",
	"tier3": "serch",
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		ix := Build(benchDocs(b, n))
		for _, name := range []string{"short", "task", "tier2", "tier3"} {
			q := benchQueries[name]
			b.Run(fmt.Sprintf("tools=%d/%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if len(ix.Search(q, Options{})) == 0 {
						b.Fatalf("%q: no hits", q)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("tools=%d/task+boost", n), func(b *testing.B) {
			u, _ := usecount.Open("")
			u.Record(ix.Doc(0).ID)
			b.ReportAllocs()
			for b.Loop() {
				ix.Search(benchQueries["task"], Options{Boost: u.Boost})
			}
		})
	}
}

// BenchmarkSearchTask measures search_tools' ranking without steps
// (SearchTask): a one-step task costs what Search does, a multi-step one
// ("task": read, plot, save) one more search per step it splits into,
// against BenchmarkSearch's task alone.
func BenchmarkSearchTask(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		ix := Build(benchDocs(b, n))
		for _, name := range []string{"short", "task"} {
			q := benchQueries[name]
			b.Run(fmt.Sprintf("tools=%d/%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if len(SearchTask(ix.Search, q, nil, Options{})) == 0 {
						b.Fatalf("%q: no hits", q)
					}
				}
			})
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		data, err := Build(benchDocs(b, n)).MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(n), "bytes/tool")
		})
		s := string(data)
		b.Run(fmt.Sprintf("tools=%d/string", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadString(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	docs := benchDocs(b, 5000)
	b.ReportAllocs()
	for b.Loop() {
		Build(docs)
	}
}

// BenchmarkWith measures registering one 20-tool backend at run time on a
// 5,000-tool frozen base.
func BenchmarkWith(b *testing.B) {
	docs := benchDocs(b, 5020)
	base := Build(docs[:5000])
	extra := docs[5000:]
	for i := range extra {
		extra[i].Backend, extra[i].ID = "runtime", "runtime."+extra[i].Name+fmt.Sprint(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		base.With(extra)
	}
}

// BenchmarkTryAlso measures one follow-up suggestion on a 5,000-tool
// frozen base: tokenizing the query and filtering a precomputed list.
func BenchmarkTryAlso(b *testing.B) {
	docs := benchDocs(b, 5000)
	ix := Build(docs)
	backend := docs[0].Backend
	b.ReportAllocs()
	for b.Loop() {
		if len(ix.TryAlso(backend, benchQueries["short"], 5)) == 0 {
			b.Fatal("no suggestions")
		}
	}
}
