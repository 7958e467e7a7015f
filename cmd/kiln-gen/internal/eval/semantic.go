package eval

import (
	"context"
	"fmt"

	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
)

// SemanticOptions adds the embedding rows to a report.
type SemanticOptions struct {
	// Embedder embeds the tools (semantic.ToolText, as emit does) and the
	// queries.
	Embedder semantic.Embedder
	// Model names the model in the row labels and the report's note.
	Model string
}

// semanticRows measures the embedding ranking alone and fused with ix, the
// shipped lexical index of docs, as search_tools in a SEMANTIC=1 build
// ranks (semantic.Searcher).
func semanticRows(ctx context.Context, ix *search.Index, docs []search.Doc, qs []Query, o *SemanticOptions) ([]Row, error) {
	ids := make([]string, len(docs))
	texts := make([]string, len(docs))
	for i, d := range docs {
		ids[i], texts[i] = d.ID, semantic.ToolText(d.Name, d.Description)
	}
	v, err := semantic.BuildVectors(o.Embedder, ids, texts, o.Model, "")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	fused, err := semantic.NewSearcher(ix, v, o.Embedder, semantic.SearcherOptions{})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var queryErr error
	only, err := evaluate(ctx, qs, func(q *Query) []search.Hit {
		hits, err := v.Query(o.Embedder, q.Query, 10)
		if err != nil {
			queryErr = err
			return nil
		}
		out := make([]search.Hit, len(hits))
		for i, h := range hits {
			out[i] = search.Hit{ID: h.ID, Score: float64(h.Score), Tier: search.TierSemantic}
		}
		return out
	})
	if err == nil {
		err = queryErr
	}
	if err != nil {
		return nil, fmt.Errorf("eval: semantic: %w", err)
	}
	only.Name = "semantic only (" + o.Model + ")"
	both, err := evaluate(ctx, qs, func(q *Query) []search.Hit {
		return fused.Search(q.Query, search.Options{Limit: 10})
	})
	if err != nil {
		return nil, err
	}
	both.Name = fmt.Sprintf("shipped + semantic, RRF k=%d, %d per side", semantic.RRFK, semantic.MinCandidates)
	return []Row{only, both}, nil
}
