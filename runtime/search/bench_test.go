package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchDocs replays the tool-retrieval benchmark fleets (LiveMCPBench's 527
// MCP tools and ToolBench's 2,479 APIs) with renamed backends until there
// are n tools. KILN_BENCH_DIR overrides the folder.
func benchDocs(b *testing.B, n int) []Doc {
	b.Helper()
	dir := os.Getenv("KILN_BENCH_DIR")
	if dir == "" {
		dir = "/work/shared/bench"
	}
	var src []Doc
	for _, set := range []string{"livemcpbench", "toolbench"} {
		f, err := os.Open(filepath.Join(dir, set, "tools.jsonl"))
		if err != nil {
			b.Skipf("bench data: %v (set KILN_BENCH_DIR)", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var t struct {
				Server, Name, Title, Description string
				InputSchema                      json.RawMessage
			}
			if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
				b.Fatal(err)
			}
			src = append(src, NewDoc(t.Server, t.Name, t.Title, t.Description, t.InputSchema))
		}
		f.Close()
	}
	out := make([]Doc, 0, n)
	for copyN := 0; len(out) < n; copyN++ {
		for _, d := range src[:min(len(src), n-len(out))] {
			if copyN > 0 {
				d.Backend = fmt.Sprintf("%s-r%d", d.Backend, copyN)
				d.ID = d.Backend + "." + d.Name
			}
			out = append(out, d)
		}
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
			u, _ := OpenUsage("")
			u.Record(ix.Doc(0).ID)
			b.ReportAllocs()
			for b.Loop() {
				ix.Search(benchQueries["task"], Options{Boost: u.Boost})
			}
		})
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
