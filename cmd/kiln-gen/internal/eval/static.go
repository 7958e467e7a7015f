package eval

import (
	"context"
	"fmt"

	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// StaticOptions adds the static word-vector rows to a report.
type StaticOptions struct {
	// Raw is the full word-vector set (static.Read).
	Raw *static.Raw
	// Source and SHA256 name it, as emit records them.
	Source, SHA256 string
	// Top is the vocabulary cut: the tools' words plus the Top most
	// frequent words.
	Top int
	// Sweep also measures other cuts, weights and depths.
	Sweep bool
}

// staticFusion is one fused configuration of the static tier.
type staticFusion struct {
	name string
	opts semantic.SearcherOptions
}

// staticRows measures the static tier as emit would freeze it for docs
// (vocabulary cut, int8, common component fitted on docs), fused with ix
// each way semantic.Searcher can, on the task alone and on both step
// paths of search_tools.
func staticRows(ctx context.Context, ix *search.Index, docs []search.Doc, qs []Query, o *StaticOptions) ([]Row, error) {
	var rows []Row
	fusions := []staticFusion{
		{"RRF", semantic.SearcherOptions{Fusion: semantic.FuseRRF}},
		{"linear w=0.5", semantic.SearcherOptions{Fusion: semantic.FuseLinear, Weight: 0.5}},
		{"rerank top-30 w=0.5", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.5, Depth: 30}},
	}
	if o.Sweep {
		fusions = append(fusions,
			staticFusion{"linear w=0.25", semantic.SearcherOptions{Fusion: semantic.FuseLinear, Weight: 0.25}},
			staticFusion{"linear w=1", semantic.SearcherOptions{Fusion: semantic.FuseLinear, Weight: 1}},
			staticFusion{"linear w=0.1", semantic.SearcherOptions{Fusion: semantic.FuseLinear, Weight: 0.1}},
			staticFusion{"rerank top-30 w=0.05", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.05, Depth: 30}},
			staticFusion{"rerank top-30 w=0.1", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.1, Depth: 30}},
			staticFusion{"rerank top-30 w=0.25", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.25, Depth: 30}},
			staticFusion{"rerank top-30 w=1", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 1, Depth: 30}},
			staticFusion{"rerank top-100 w=0.5", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.5, Depth: 100}},
			staticFusion{"rerank top-10 w=0.5", semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: 0.5, Depth: 10}},
		)
	}
	if o.Sweep {
		// The feasibility check reranked plain BM25: reproduce it, so
		// a loss on the shipped ranker is the ranker's strength, not this
		// embedding's weakness.
		rs, err := baselineRows(ctx, docs, qs, o)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	tops := []int{o.Top}
	if o.Sweep {
		tops = append(tops, 0, 10_000, 100_000, len(o.Raw.Words))
	}
	for ti, top := range tops {
		e, v, size, err := staticTier(docs, o, top)
		if err != nil {
			return nil, err
		}
		if ti == 0 {
			only, err := evaluate(ctx, qs, func(q *Query) []search.Hit {
				vec, _ := e.Embed(q.Query)
				var out []search.Hit
				for _, h := range v.Nearest(vec, 10) {
					out = append(out, search.Hit{ID: h.ID, Score: float64(h.Score), Tier: search.TierSemantic})
				}
				return out
			})
			if err != nil {
				return nil, err
			}
			only.Name = fmt.Sprintf("static vectors alone (tool words + top %d)", top)
			rows = append(rows, only)
		}
		fs := fusions
		if ti > 0 {
			fs = fusions[2:3]
		}
		for _, f := range fs {
			s, err := semantic.NewSearcher(ix, v, e, f.opts)
			if err != nil {
				return nil, fmt.Errorf("eval: static: %w", err)
			}
			label := fmt.Sprintf("shipped + static vectors (tool words + top %d, %d KiB), %s", top, size>>10, f.name)
			opt := search.Options{Limit: 10}
			paths := []struct {
				name string
				run  func(q *Query) []search.Hit
			}{
				{"", func(q *Query) []search.Hit { return s.Search(q.Query, opt) }},
				{", task + auto steps anchored", func(q *Query) []search.Hit { return search.SearchTask(s.Search, q.Query, nil, opt) }},
				{", task + steps interleaved", func(q *Query) []search.Hit {
					return search.SearchSteps(s.Search, q.Query, q.Steps, search.MergeInterleave, opt)
				}},
			}
			if ti > 0 {
				paths = paths[:1]
			}
			for _, p := range paths {
				row, err := evaluate(ctx, qs, p.run)
				if err != nil {
					return nil, err
				}
				row.Name = label + p.name
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// staticTier builds the embedder and tool vectors emit and kiln would:
// the cut of o.Raw to the tools' words plus the top most frequent, fitted
// on the tools, after a MarshalBinary/Load round trip.
func staticTier(docs []search.Doc, o *StaticOptions, top int) (*static.Embedder, *semantic.Vectors, int, error) {
	ids, texts := make([]string, len(docs)), make([]string, len(docs))
	for i, d := range docs {
		ids[i], texts[i] = d.ID, semantic.ToolText(d.Name, d.Description)
	}
	t := static.CutFor(o.Raw, o.Source, o.SHA256, texts, top)
	b, err := t.MarshalBinary()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("eval: static: %w", err)
	}
	if t, err = static.Load(b); err != nil {
		return nil, nil, 0, fmt.Errorf("eval: static: %w", err)
	}
	e := static.NewEmbedder(t)
	v, err := semantic.BuildVectors(e, ids, texts, o.Source, o.SHA256)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("eval: static: %w", err)
	}
	return e, v, len(b), nil
}

// baselineRows ranks with the README's plain BM25 (server + name x2 +
// desc) alone and reranked by the static tier.
func baselineRows(ctx context.Context, docs []search.Doc, qs []Query, o *StaticOptions) ([]Row, error) {
	ix, err := roundTrip(search.BuildWith(docs, Baseline(true)))
	if err != nil {
		return nil, err
	}
	e, v, _, err := staticTier(docs, o, o.Top)
	if err != nil {
		return nil, err
	}
	opt := search.Options{Limit: 10}
	base, err := evaluate(ctx, qs, func(q *Query) []search.Hit { return ix.Search(q.Query, opt) })
	if err != nil {
		return nil, err
	}
	base.Name = "plain BM25 (server+name x2+desc)"
	rows := []Row{base}
	for _, w := range []float64{0.25, 0.5} {
		s, err := semantic.NewSearcher(ix, v, e, semantic.SearcherOptions{Fusion: semantic.FuseRerank, Weight: w, Depth: 100})
		if err != nil {
			return nil, fmt.Errorf("eval: static: %w", err)
		}
		row, err := evaluate(ctx, qs, func(q *Query) []search.Hit { return s.Search(q.Query, opt) })
		if err != nil {
			return nil, err
		}
		row.Name = fmt.Sprintf("plain BM25 + static vectors, rerank top-100 w=%g", w)
		rows = append(rows, row)
	}
	return rows, nil
}
