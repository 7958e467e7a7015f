package semantic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestFuse(t *testing.T) {
	tests := []struct {
		name         string
		lexical, sem []string
		k            int
		want         []string
	}{
		{"both empty", nil, nil, 0, nil},
		{"lexical only keeps order", []string{"c", "a", "b"}, nil, 0, []string{"c", "a", "b"}},
		{"semantic only keeps order", nil, []string{"z", "y"}, 0, []string{"z", "y"}},
		// b: 1/62+1/61 beats a: 1/61 and c: 1/62.
		{"agreement wins", []string{"a", "b"}, []string{"b", "c"}, 0, []string{"b", "a", "c"}},
		// a and x both score 1/61: the lexical hit goes first.
		{"tie goes to lexical", []string{"a"}, []string{"x"}, 0, []string{"a", "x"}},
		// p and q score 1/61+1/62 each; p has the better lexical rank.
		{"mirror tie by lexical rank", []string{"p", "q"}, []string{"q", "p"}, 0, []string{"p", "q"}},
		{"repeats ignored", []string{"a", "a", "b"}, []string{"b", "b"}, 0, []string{"b", "a"}},
		// d at rank 2 in both (2/62) beats a and e at rank 1 in one (1/61).
		{"default k", []string{"a", "d"}, []string{"e", "d"}, 0, []string{"d", "a", "e"}},
		// k=1 favours top ranks: a and e (1/2) beat d at rank 4 in both (2/5).
		{"small k", []string{"a", "x", "y", "d"}, []string{"e", "f", "g", "d"}, 1, []string{"a", "e", "d", "x", "f", "y", "g"}},
		// k=60 favours agreement: d (2/64) beats a and e (1/61).
		{"k 60, same lists", []string{"a", "x", "y", "d"}, []string{"e", "f", "g", "d"}, 60, []string{"d", "a", "e", "x", "f", "y", "g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Fuse(tc.lexical, tc.sem, tc.k)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Fuse(%v, %v, %d) (-want +got):\n%s", tc.lexical, tc.sem, tc.k, diff)
			}
		})
	}
}

// TestFuseScores checks random rankings against the RRF formula computed
// directly: every ID once, scores never increasing down the list.
func TestFuseScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	list := func() []string {
		var ids []string
		for range rng.IntN(40) {
			ids = append(ids, fmt.Sprint("t", rng.IntN(50)))
		}
		return ids
	}
	for i := range 200 {
		lex, sem := list(), list()
		score := map[string]float64{}
		for _, l := range [][]string{lex, sem} {
			seen := map[string]bool{}
			rank := 0
			for _, id := range l {
				if !seen[id] {
					seen[id] = true
					rank++
					score[id] += 1 / float64(RRFK+rank)
				}
			}
		}
		got := Fuse(lex, sem, 0)
		var wantIDs []string
		for id := range score {
			wantIDs = append(wantIDs, id)
		}
		if diff := cmp.Diff(wantIDs, got, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("case %d: fused IDs (-want +got):\n%s", i, diff)
		}
		if !slices.IsSortedFunc(got, func(a, b string) int {
			switch {
			case score[a] > score[b]:
				return -1
			case score[a] < score[b]:
				return 1
			}
			return 0
		}) {
			t.Fatalf("case %d: Fuse(%v, %v) = %v is not ordered by RRF score", i, lex, sem, got)
		}
	}
}
