package eval

import "math"

// Scores are the per-query metrics, averaged over queries in a Row.
type Scores struct {
	Recall5 float64 `json:"recall@5"`
	NDCG5   float64 `json:"ndcg@5"`
	MRR10   float64 `json:"mrr@10"`
}

// score computes a query's metrics from its ranked IDs. Relevance is
// binary per group: a hit counts when it is the first retrieved member of a
// group not yet satisfied, so listing two interchangeable tools earns once.
// Recall divides by the number of groups; the ideal DCG assumes
// min(groups, 5) hits at the top.
func score(ranked []string, groups [][]string) Scores {
	groupOf := map[string][]int{}
	for g, members := range groups {
		for _, m := range members {
			groupOf[m] = append(groupOf[m], g)
		}
	}
	satisfied := make([]bool, len(groups))
	var s Scores
	found, dcg := 0, 0.0
	for rank, id := range ranked[:min(len(ranked), 10)] {
		gs, relevant := groupOf[id]
		if relevant && s.MRR10 == 0 {
			s.MRR10 = 1 / float64(rank+1)
		}
		if rank >= 5 {
			continue
		}
		for _, g := range gs {
			if !satisfied[g] {
				satisfied[g] = true
				found++
				dcg += 1 / math.Log2(float64(rank+2))
				break
			}
		}
	}
	idcg := 0.0
	for i := range min(len(groups), 5) {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if len(groups) > 0 {
		s.Recall5 = float64(found) / float64(len(groups))
		s.NDCG5 = dcg / idcg
	}
	return s
}
