package semantic

import (
	"cmp"
	"slices"
)

// RRFK is the Reciprocal Rank Fusion constant: a document at rank r (from
// 1) of a list scores 1/(RRFK+r). 60 is the value of Cormack et al. (2009),
// large enough that one list's top rank does not drown the other list.
const RRFK = 60

// MinCandidates is how many results each side (lexical and semantic)
// should contribute before fusing: with fewer, a tool ranked moderately by
// both lists can be cut from one of them and lose its combined score.
const MinCandidates = 30

// Fuse merges two rankings of IDs, best first, by Reciprocal Rank Fusion
// with constant k (k <= 0 means RRFK), and returns every ID once, best
// first. Equal scores go to the better lexical rank, then the better
// semantic rank, then the smaller ID, so the order is deterministic and an
// exact keyword hit wins a tie. Within one list, repeats of an ID are
// ignored.
func Fuse(lexical, semantic []string, k int) []string {
	if k <= 0 {
		k = RRFK
	}
	type entry struct {
		id       string
		score    float64
		lex, sem int // 1-based rank, 0 when absent
	}
	var entries []*entry
	byID := map[string]*entry{}
	add := func(list []string, rank func(*entry) *int) {
		r := 0
		for _, id := range list {
			e := byID[id]
			if e == nil {
				e = &entry{id: id}
				byID[id] = e
				entries = append(entries, e)
			}
			if *rank(e) != 0 {
				continue
			}
			r++
			*rank(e) = r
			e.score += 1 / float64(k+r)
		}
	}
	add(lexical, func(e *entry) *int { return &e.lex })
	add(semantic, func(e *entry) *int { return &e.sem })

	absentLast := func(r int) int {
		if r == 0 {
			return len(lexical) + len(semantic) + 1
		}
		return r
	}
	slices.SortFunc(entries, func(a, b *entry) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(absentLast(a.lex), absentLast(b.lex)); c != 0 {
			return c
		}
		if c := cmp.Compare(absentLast(a.sem), absentLast(b.sem)); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.id
	}
	return out
}
