package semantic

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/search"
)

func hitIDs(hs []search.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func TestLinearHits(t *testing.T) {
	lex := []search.Hit{{ID: "a", Score: 10, Tier: search.TierBM25}, {ID: "b", Score: 9, Tier: search.TierBM25}, {ID: "c", Score: 2, Tier: search.TierBM25}}
	for _, tc := range []struct {
		name string
		sem  []scored
		cos  []float64
		w    float64
		want []string
	}{
		{"cosine breaks a near-tie", nil, []float64{0, 0.5, 0}, 0.5, []string{"b", "a", "c"}},
		{"a small weight cannot lift a weak hit", nil, []float64{0, 0, 1}, 0.1, []string{"a", "b", "c"}},
		{"equal scores keep the lexical order", nil, []float64{0, 0.1 / 0.5, 0}, 0.5, []string{"a", "b", "c"}},
		{"a vector-only tool joins at w·similarity", []scored{{"d", 0.9}, {"a", 0.9}}, []float64{0.9, 0, 0}, 0.5, []string{"a", "b", "d", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := linearHits(lex, tc.sem, tc.cos, tc.w, 10)
			if diff := cmp.Diff(tc.want, hitIDs(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, h := range got {
				if want := search.TierBM25; h.ID == "d" && h.Tier != search.TierSemantic || h.ID != "d" && h.Tier != want {
					t.Errorf("%s has tier %v", h.ID, h.Tier)
				}
			}
		})
	}
	if got := linearHits(lex, nil, []float64{0, 0, 0}, 0.5, 2); len(got) != 2 {
		t.Errorf("limit 2 gave %d hits", len(got))
	}
}

// TestSearcherFusions: rerank only reorders what the words found; linear
// and RRF may add a tool only the vectors found; a tool registered at run
// time is reranked by its own vector.
func TestSearcherFusions(t *testing.T) {
	e := newConceptEmbedder()
	lex, v := frozen(t, e, searchDocs)
	// "read the forecast file": lexically read_file and get_forecast; the
	// concept axes see weather and file words equally.
	q := "umbrella forecast"
	for _, tc := range []struct {
		fusion   Fusion
		wantOnly bool // only lexical hits
	}{{FuseRerank, true}, {FuseLinear, false}, {FuseRRF, false}} {
		t.Run(tc.fusion.String(), func(t *testing.T) {
			s, err := NewSearcher(lex, v, e, SearcherOptions{Fusion: tc.fusion, Weight: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			lexHits := lex.Search(q, search.Options{Limit: 10})
			got := s.Search(q, search.Options{Limit: 10})
			if len(got) == 0 || got[0].ID != "weather.get_forecast" {
				t.Fatalf("Search(%q) = %v, want get_forecast first", q, hitIDs(got))
			}
			if tc.wantOnly && len(got) != len(lexHits) {
				t.Errorf("rerank returned %v, the words found %v", hitIDs(got), hitIDs(lexHits))
			}
		})
	}
	s, err := NewSearcher(lex, v, e, SearcherOptions{Fusion: FuseRerank, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Both tools say "city"; only the run-time one is about weather.
	added := s.With([]search.Doc{search.NewDoc("meteo", "city_report", "", "City report: rain and temperature for a city.", nil),
		search.NewDoc("maps", "city_map", "", "Map of a city.", nil)})
	got := added.Search("city umbrella", search.Options{Limit: 3})
	if len(got) == 0 || got[0].ID != "meteo.city_report" {
		t.Errorf("after With, Search = %v, want meteo.city_report first", hitIDs(got))
	}
}
