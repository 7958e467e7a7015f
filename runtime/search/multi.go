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
	// MergeAnchored is for steps split from the task (SplitTask): the
	// task's ranking leads, and each step's ranking is re-scored by
	// AnchorWeight times the task's score (each normalised by its best)
	// before the rankings interleave, task first. A step cut from its
	// sentence ("and save it", "tell me the links") is vague; the task's
	// words keep its tools on topic.
	MergeAnchored
)

// AnchorWeight scales the task's normalised score added to a step's in
// MergeAnchored. Measured with SplitTask (nDCG@5 LiveMCPBench /
// ToolBench; task alone .387 / .720): 0 (plain interleaving, task first)
// .381 / .717, 1 .379 / .729, 1.5 .385 / .733, 2 .386 / .733, 3 .385 /
// .732, 5 .387 / .728; the task last instead .364 / .684 at 0 and .383 /
// .728 at 2 (50 deep); fused by reciprocal rank, unanchored, .377 / .662.
// On LiveMCPBench's annotated steps anchoring hurts (.596 → .538 at 1), so
// SearchSteps' other merges leave an agent's steps alone.
const AnchorWeight = 2.0

// Searchf is one ranked search, such as Index.Search.
type Searchf func(query string, opts Options) []Hit

// SearchSteps searches a task and each of its sub-steps ("find the
// repository", "open an issue") and merges the rankings, so a task that
// names several steps finds a tool for each. Steps that are empty, repeat
// the task or repeat another step are skipped, and at most MaxSteps are
// read. Without steps it is exactly search(task, opts). A hit keeps the
// Score and Tier of the ranking that listed it first (MergeInterleave,
// MergeAnchored), or gets its fused score and best tier (MergeRRF).
//
// A step is a short, specific query ("convert the table to CSV") while a
// task mixes every step's words, so the steps' rankings lead and the
// task's comes last, catching what no step named. kiln-gen eval measures this
// on LiveMCPBench's annotated steps (nDCG@5): task alone 0.366, fused by
// reciprocal rank 0.451, interleaved with the task first 0.539, with the
// task last 0.587. Steps cut from the task's own text are not short and
// specific, so MergeAnchored puts the task first instead.
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
	switch merge {
	case MergeRRF:
		// Candidates below a query's top 2·limit rarely survive fusion.
		per.Limit = max(2*limit, 20)
	case MergeAnchored:
		// A step's best tools under the task's are found among both
		// rankings' tops. 50 deep measured .389 / .733 (LiveMCPBench /
		// ToolBench nDCG@5) against 20 deep's .386 / .733, for a third
		// more CPU per split task (BenchmarkSearchTask).
		per.Limit = max(2*limit, 20)
	}
	lists := make([][]Hit, len(queries))
	for i, q := range queries {
		lists[i] = search(q, per)
	}
	switch merge {
	case MergeRRF:
		return fuse(lists, limit)
	case MergeAnchored:
		task := lists[len(lists)-1]
		anchored := append([][]Hit{task[:min(limit, len(task))]}, anchor(lists[:len(lists)-1], task, limit)...)
		return interleave(anchored, limit)
	}
	return interleave(lists, limit)
}

// SearchTask is search_tools' ranking: with the agent's steps,
// SearchSteps with DefaultMerge; without, the steps SplitTask finds,
// merged with MergeAnchored; a task of one step is search(task, opts).
func SearchTask(search Searchf, task string, steps []string, opts Options) []Hit {
	if len(steps) > 0 {
		return SearchSteps(search, task, steps, DefaultMerge, opts)
	}
	return SearchSteps(search, task, SplitTask(task), MergeAnchored, opts)
}

// anchor re-ranks each step's hits by their score plus AnchorWeight times
// the task's, each divided by its ranking's best, over the tools of both.
// A hit keeps the Score and Tier of the step's ranking, or of the task's
// for a tool only the task found. A step with no hit adds nothing.
func anchor(steps [][]Hit, task []Hit, limit int) [][]Hit {
	per := 0
	for _, l := range steps {
		per = max(per, len(l))
	}
	type scored struct {
		hit Hit
		s   float64
	}
	inTask := make(map[string]int, len(task))
	for i, h := range task {
		inTask[h.ID] = i
	}
	bt := best(task)
	used := make([]bool, len(task))
	all := make([]scored, 0, per+len(task))
	out := make([][]Hit, len(steps))
	for k, step := range steps {
		if len(step) == 0 {
			continue
		}
		clear(used)
		all = all[:0]
		bs := best(step)
		for _, h := range step {
			s := h.Score / bs
			if i, ok := inTask[h.ID]; ok {
				used[i] = true
				s += AnchorWeight * task[i].Score / bt
			}
			all = append(all, scored{h, s})
		}
		for i, h := range task {
			if !used[i] {
				all = append(all, scored{h, AnchorWeight * h.Score / bt})
			}
		}
		slices.SortFunc(all, func(a, b scored) int {
			if c := cmp.Compare(b.s, a.s); c != 0 {
				return c
			}
			return strings.Compare(a.hit.ID, b.hit.ID)
		})
		l := make([]Hit, min(limit, len(all)))
		for i := range l {
			l[i] = all[i].hit
		}
		out[k] = l
	}
	return out
}

// best is a ranking's top score, or 1 when it has none above zero, so
// dividing by it never flips or blows up a score.
func best(hits []Hit) float64 {
	if len(hits) == 0 || hits[0].Score <= 0 {
		return 1
	}
	return hits[0].Score
}

// DefaultMerge is the merge search_tools uses for the agent's steps.
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
