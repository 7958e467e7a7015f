package semantic

import (
	"cmp"
	"slices"

	"github.com/kilnmcp/kiln/runtime/search"
)

// Fusion is how Searcher merges the lexical ranking with the vectors.
type Fusion uint8

// The fusions kiln-gen eval compares. RRF gives a list's rank 1 the same
// pull whatever its score, so a weak embedding (static word vectors) drags
// good lexical hits down; the score-based ones let the lexical score lead
// and the cosine break near-ties.
const (
	// FuseRRF is Reciprocal Rank Fusion (Fuse) of the lexical top
	// MinCandidates and the nearest MinCandidates.
	FuseRRF Fusion = iota
	// FuseLinear scores the union of both top lists by
	// lexical/best-lexical + Weight·cosine (0 lexical for a tool only the
	// vectors found).
	FuseLinear
	// FuseRerank reorders the lexical top Depth by the same score and adds
	// no tool the words did not find.
	FuseRerank
)

// DefaultWeight is the cosine's weight for FuseLinear and FuseRerank.
const DefaultWeight = 0.5

// DefaultDepth is how many lexical hits FuseRerank reorders.
const DefaultDepth = 30

// String names the fusion as config and eval rows spell it.
func (f Fusion) String() string {
	switch f {
	case FuseLinear:
		return "linear"
	case FuseRerank:
		return "rerank"
	}
	return "rrf"
}

// cosines returns the cosine of q with each lexical hit's vector; a tool
// without one (it failed to embed) gets 0.
func (s *Searcher) cosines(q []float32, lex []search.Hit) []float64 {
	out := make([]float64, len(lex))
	qi := invNorm(q)
	if qi == 0 {
		return out
	}
	d := s.base.Dim
	for i, h := range lex {
		if j, ok := s.overIdx[h.ID]; ok {
			r := &s.over[j]
			out[i] = float64(dot(q, r.vec) * qi * r.inv)
		} else if j, ok := s.row[h.ID]; ok && !s.skip[j] {
			out[i] = float64(dot(q, s.base.Data[j*d:(j+1)*d]) * qi * s.baseInv[j])
		}
	}
	return out
}

// linearHits scores each lexical hit lexScore/bestLexScore + w·cos[i] and
// each tool only in sem w·similarity, and returns the best limit, ties to
// the better lexical rank, then the ID. A hit keeps its lexical tier; a
// tool only the vectors found is search.TierSemantic.
func linearHits(lex []search.Hit, sem []scored, cos []float64, w float64, limit int) []search.Hit {
	type cand struct {
		hit  search.Hit
		rank int
	}
	best := 0.0
	for _, h := range lex {
		best = max(best, h.Score)
	}
	cands := make([]cand, 0, len(lex)+len(sem))
	seen := make(map[string]bool, len(lex))
	for i, h := range lex {
		n := 0.0
		if best > 0 {
			n = h.Score / best
		}
		h.Score = n + w*cos[i]
		cands = append(cands, cand{h, i})
		seen[h.ID] = true
	}
	for _, c := range sem {
		if !seen[c.id] {
			cands = append(cands, cand{search.Hit{ID: c.id, Score: w * c.sim, Tier: search.TierSemantic}, len(lex)})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.hit.Score, a.hit.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return cmp.Compare(a.hit.ID, b.hit.ID)
	})
	out := make([]search.Hit, 0, min(limit, len(cands)))
	for _, c := range cands[:min(limit, len(cands))] {
		out = append(out, c.hit)
	}
	return out
}
