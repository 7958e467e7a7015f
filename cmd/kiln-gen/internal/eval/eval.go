package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/search"
)

// Options selects what Run measures.
type Options struct {
	// Ablation also measures each step of the ablation ladder, from the
	// README's plain-BM25 baseline to the shipped configuration.
	Ablation bool
	// Semantic, when set, adds the embedding ranking alone and fused with
	// the shipped lexical index (RRF), as a SEMANTIC=1 kiln ranks.
	Semantic *SemanticOptions
	// Static, when set, adds the static word-vector tier's rows.
	Static *StaticOptions
}

// Row is one configuration's averaged metrics.
type Row struct {
	Name string `json:"name"`
	Scores
	// Tiers counts the queries each tier answered ("none": no hit).
	Tiers map[string]int `json:"tiers"`
}

// Report is the result of one Run.
type Report struct {
	Dataset string `json:"dataset"`
	Tools   int    `json:"tools"`
	Queries int    `json:"queries"`
	Rows    []Row  `json:"rows"`
	// Notes qualify the numbers, e.g. which embedding model they measure.
	Notes []string `json:"notes,omitempty"`
}

// Run evaluates search over the bench files. Rows are the ablation ladder
// (with Options.Ablation), then the shipped configuration given the task
// alone, then the task with the steps SplitTask finds (search_tools
// without steps), then with each query's annotated sub-steps
// (search_tools' steps argument), interleaved and fused, and with
// Options.Ablation the split steps merged the other ways. Steps are
// queries, never labels; a query without annotated steps ranks there as
// the task alone. Every index is evaluated after a
// MarshalBinary/Load round trip, as the gateway serves it.
func Run(ctx context.Context, toolsPath, queriesPath string, opts Options) (*Report, error) {
	docs, err := LoadTools(toolsPath)
	if err != nil {
		return nil, fmt.Errorf("eval: load tools: %w", err)
	}
	qs, err := LoadQueries(queriesPath)
	if err != nil {
		return nil, fmt.Errorf("eval: load queries: %w", err)
	}
	rep := &Report{Dataset: filepath.Base(filepath.Dir(toolsPath)), Tools: len(docs), Queries: len(qs)}
	var steps []Step
	if opts.Ablation {
		steps = Ladder()
	}
	final := Step{Name: "shipped (search.Build)", Config: search.DefaultConfig()}
	steps = append(steps, final)
	var ix *search.Index
	for _, st := range steps {
		if ix, err = roundTrip(search.BuildWith(docs, st.Config)); err != nil {
			return nil, fmt.Errorf("eval: %s: %w", st.Name, err)
		}
		row, err := Evaluate(ctx, ix, qs)
		if err != nil {
			return nil, err
		}
		row.Name = st.Name
		rep.Rows = append(rep.Rows, row)
	}
	// search_tools without steps splits the task itself (SearchTask);
	// with the agent's steps it interleaves them, and a query without
	// steps ranks there as the task alone, which is what a dataset
	// without steps shows. Splits merged otherwise are the alternatives
	// measured against MergeAnchored.
	type merged struct {
		name string
		run  func(q *Query) []search.Hit
	}
	opt := search.Options{Limit: 10}
	rows := []merged{
		{"task + auto steps anchored (search_tools without steps)", func(q *Query) []search.Hit {
			return search.SearchTask(ix.Search, q.Query, nil, opt)
		}},
		{"task + steps interleaved (search_tools with steps)", func(q *Query) []search.Hit {
			return search.SearchSteps(ix.Search, q.Query, q.Steps, search.MergeInterleave, opt)
		}},
		{"task + steps fused (RRF)", func(q *Query) []search.Hit {
			return search.SearchSteps(ix.Search, q.Query, q.Steps, search.MergeRRF, opt)
		}},
	}
	if opts.Ablation {
		rows = append(rows, merged{"task + auto steps interleaved, task last", func(q *Query) []search.Hit {
			return search.SearchSteps(ix.Search, q.Query, search.SplitTask(q.Query), search.MergeInterleave, opt)
		}}, merged{"task + auto steps fused (RRF)", func(q *Query) []search.Hit {
			return search.SearchSteps(ix.Search, q.Query, search.SplitTask(q.Query), search.MergeRRF, opt)
		}})
	}
	for _, m := range rows {
		row, err := evaluate(ctx, qs, m.run)
		if err != nil {
			return nil, err
		}
		row.Name = final.Name + ", " + m.name
		rep.Rows = append(rep.Rows, row)
	}
	if !slices.ContainsFunc(qs, func(q Query) bool { return len(q.Steps) > 0 }) {
		rep.Notes = append(rep.Notes, "No query carries annotated steps: the rows with steps (not auto steps) rank as the task alone.")
	}
	if opts.Semantic != nil {
		rows, err := semanticRows(ctx, ix, docs, qs, opts.Semantic)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, rows...)
		rep.Notes = append(rep.Notes, fmt.Sprintf("The semantic rows measure %s; they mean something only for a trained sentence-embedding model "+
			"such as all-MiniLM-L6-v2. A test model (runtime/search/semantic/semantictest) behaves as a bag of words and gives meaningless numbers.", opts.Semantic.Model))
	}
	if opts.Static != nil {
		rows, err := staticRows(ctx, ix, docs, qs, opts.Static)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	return rep, nil
}

func roundTrip(ix *search.Index) (*search.Index, error) {
	b, err := ix.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return search.Load(b)
}

// Evaluate runs every query against ix and averages the metrics.
func Evaluate(ctx context.Context, ix *search.Index, qs []Query) (Row, error) {
	return evaluate(ctx, qs, func(q *Query) []search.Hit {
		return ix.Search(q.Query, search.Options{Limit: 10})
	})
}

func evaluate(ctx context.Context, qs []Query, run func(*Query) []search.Hit) (Row, error) {
	row := Row{Tiers: map[string]int{}}
	ranked := make([]string, 0, 10)
	for i := range qs {
		if err := ctx.Err(); err != nil {
			return row, fmt.Errorf("eval: %w", err)
		}
		hits := run(&qs[i])
		ranked = ranked[:0]
		tier := search.TierNone
		for _, h := range hits {
			ranked = append(ranked, h.ID)
		}
		if len(hits) > 0 {
			// The best hit's: a fused ranking mixes tiers.
			tier = hits[0].Tier
		}
		row.Tiers[tier.String()]++
		s := score(ranked, qs[i].labels())
		row.Recall5 += s.Recall5
		row.NDCG5 += s.NDCG5
		row.MRR10 += s.MRR10
	}
	if n := float64(len(qs)); n > 0 {
		row.Recall5 /= n
		row.NDCG5 /= n
		row.MRR10 /= n
	}
	return row, nil
}

// Table renders the report as a Markdown table.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d tools, %d queries\n\n", r.Dataset, r.Tools, r.Queries)
	b.WriteString("| configuration | R@5 | nDCG@5 | MRR@10 | tiers |\n|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %s |\n", row.Name, row.Recall5, row.NDCG5, row.MRR10, tiers(row.Tiers))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}

func tiers(m map[string]int) string {
	var parts []string
	for t := search.TierNone; t <= search.TierSemantic; t++ {
		if n := m[t.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", t, n))
		}
	}
	return strings.Join(parts, ", ")
}

// JSON renders the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}
