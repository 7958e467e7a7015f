package search

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSearchSteps(t *testing.T) {
	ix := Build(corpus())
	task := "check the weather and save it"
	steps := []string{"get the forecast", "write the result to a file"}

	t.Run("each step's best tool leads", func(t *testing.T) {
		got := ids(SearchSteps(ix.Search, task, steps, MergeInterleave, Options{Limit: 5}))
		want := []string{ids(ix.Search(steps[0], Options{Limit: 1}))[0], ids(ix.Search(steps[1], Options{Limit: 1}))[0]}
		if len(got) < 2 || !slices.Equal(got[:2], want) {
			t.Errorf("first hits %v, want the steps' best tools %v in step order", got, want)
		}
		if !slices.Contains(got, "weather.get-forecast") || !slices.Contains(got, "files.write_file") {
			t.Errorf("hits %v lack a step's tool", got)
		}
		if len(got) != 5 {
			t.Errorf("%d hits, want the limit 5", len(got))
		}
		if len(got) != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
			t.Errorf("a tool listed twice: %v", got)
		}
	})

	t.Run("without steps it is Search", func(t *testing.T) {
		want := ix.Search(task, Options{Limit: 3})
		for _, s := range [][]string{nil, {}, {"", "  "}, {task, "CHECK the  weather and save it"}} {
			for _, m := range []Merge{MergeInterleave, MergeRRF} {
				if diff := cmp.Diff(want, SearchSteps(ix.Search, task, s, m, Options{Limit: 3})); diff != "" {
					t.Errorf("steps %q, merge %d (-want +got):\n%s", s, m, diff)
				}
			}
		}
	})

	t.Run("repeated and excess steps are searched once", func(t *testing.T) {
		var queries []string
		count := func(q string, o Options) []Hit {
			queries = append(queries, q)
			return ix.Search(q, o)
		}
		many := []string{"read a file", "Read a  file"}
		for i := range MaxSteps + 5 {
			many = append(many, "step "+string(rune('a'+i)))
		}
		SearchSteps(count, task, many, MergeInterleave, Options{})
		if len(queries) != MaxSteps+1 || queries[0] != "read a file" || queries[1] != "step a" || queries[len(queries)-1] != task {
			t.Errorf("searched %q: want %d distinct steps, then the task", queries, MaxSteps)
		}
	})

	t.Run("fused", func(t *testing.T) {
		got := ids(SearchSteps(ix.Search, task, steps, MergeRRF, Options{Limit: 4}))
		if !slices.Contains(got, "weather.get-forecast") || !slices.Contains(got, "files.write_file") || len(got) != 4 {
			t.Errorf("fused hits %v", got)
		}
	})
}

// BenchmarkSearchSteps: what a task with three steps costs against the
// task alone (one search per step, then the merge).
func BenchmarkSearchSteps(b *testing.B) {
	ix := Build(benchDocs(b, 5000))
	steps := []string{"read an excel spreadsheet", "plot a bar chart", "save an image file"}
	for _, tc := range []struct {
		name  string
		steps []string
		merge Merge
	}{{"task", nil, MergeInterleave}, {"task+3steps/interleave", steps, MergeInterleave}, {"task+3steps/rrf", steps, MergeRRF}} {
		b.Run("tools=5000/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(SearchSteps(ix.Search, benchQueries["task"], tc.steps, tc.merge, Options{})) == 0 {
					b.Fatal("no hits")
				}
			}
		})
	}
}
