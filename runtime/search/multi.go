package search

import (
	"cmp"
	"slices"
	"strings"
)

// rrfK is the reciprocal-rank-fusion constant of Cormack et al. (SIGIR
// 2009); their experiments found results insensitive to it around 60.
const rrfK = 60

// MaxSteps bounds the sub-steps SearchSteps reads; a task rarely has more,
// and each step is one more search.
const MaxSteps = 10

// Merge selects how SearchSteps combines the rankings of a task and its
// steps.
type Merge uint8

// The merges SearchSteps accepts.
const (
	// MergeInterleave takes each ranking's best hit, then each one's
	// second, and so on (the steps in order, then the task), skipping
	// tools already listed: every step's best tool is in the first
	// len(steps) hits.
	MergeInterleave Merge = iota
	// MergeRRF fuses by reciprocal rank (Cormack et al. 2009): a tool
	// several rankings share rises, a step's lone best tool may sink.
	MergeRRF
)

// Searchf is one ranked search, such as Index.Search.
type Searchf func(query string, opts Options) []Hit

// SearchSteps searches a task and each of its sub-steps ("find the
// repository", "open an issue") and merges the rankings, so a task that
// names several steps finds a tool for each. Steps that are empty, repeat
// the task or repeat another step are skipped, and at most MaxSteps are
// read. Without steps it is exactly search(task, opts). A hit keeps the
// Score and Tier of the ranking that listed it first (MergeInterleave), or
// gets its fused score and best tier (MergeRRF).
//
// A step is a short, specific query ("convert the table to CSV") while a
// task mixes every step's words, so the steps' rankings lead and the
// task's comes last, catching what no step named. kiln-gen eval measures this
// on LiveMCPBench's annotated steps (nDCG@5): task alone 0.366, fused by
// reciprocal rank 0.451, interleaved with the task first 0.539, with the
// task last 0.587.
func SearchSteps(search Searchf, task string, steps []string, merge Merge, opts Options) []Hit {
	queries := stepQueries(task, steps)
	if len(queries) == 1 {
		return search(task, opts)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	per := Options{Limit: limit, Boost: opts.Boost}
	if merge == MergeRRF {
		// Candidates below a query's top 2·limit rarely survive fusion.
		per.Limit = max(2*limit, 20)
	}
	lists := make([][]Hit, len(queries))
	for i, q := range queries {
		lists[i] = search(q, per)
	}
	if merge == MergeRRF {
		return fuse(lists, limit)
	}
	return interleave(lists, limit)
}

// DefaultMerge is the merge search_tools uses for steps.
const DefaultMerge = MergeInterleave

// stepQueries returns the task's distinct, non-empty steps followed by the
// task.
func stepQueries(task string, steps []string) []string {
	var queries []string
	seen := map[string]bool{normQuery(task): true}
	for _, s := range steps {
		if len(queries) == MaxSteps {
			break
		}
		k := normQuery(s)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		queries = append(queries, s)
	}
	return append(queries, task)
}

func normQuery(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func interleave(lists [][]Hit, limit int) []Hit {
	seen := map[string]bool{}
	var out []Hit
	for rank := 0; len(out) < limit; rank++ {
		more := false
		for _, l := range lists {
			if rank >= len(l) {
				continue
			}
			more = true
			if h := l[rank]; !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h)
				if len(out) == limit {
					break
				}
			}
		}
		if !more {
			break
		}
	}
	return out
}

func fuse(lists [][]Hit, limit int) []Hit {
	pos := map[string]int{}
	var out []Hit
	for _, l := range lists {
		for rank, h := range l {
			i, ok := pos[h.ID]
			if !ok {
				i = len(out)
				pos[h.ID] = i
				out = append(out, Hit{ID: h.ID, Tier: h.Tier})
			}
			out[i].Score += 1 / float64(rrfK+rank+1)
			out[i].Tier = min(out[i].Tier, h.Tier)
		}
	}
	slices.SortFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))]
}

// SearchMany runs each query through the tiers and fuses the rankings by
// reciprocal rank: the first query is the task, the rest its steps (see
// SearchSteps). One query is the same as Search.
func (ix *Index) SearchMany(queries []string, opts Options) []Hit {
	if len(queries) == 0 {
		return nil
	}
	return SearchSteps(ix.Search, queries[0], queries[1:], MergeRRF, opts)
}
