package search

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func allIDs(ix *Index) []string {
	out := make([]string, ix.Len())
	for i := range out {
		out[i] = ix.Doc(i).ID
	}
	return out
}

func TestWith(t *testing.T) {
	base := Build(corpus())
	translate := NewDoc("deepl", "translate_text", "", "Translate text into another language.", nil)
	weather2 := NewDoc("weather", "get-forecast", "", "Seven-day weather forecast for a city, hourly.", nil)

	added := base.With([]Doc{translate})
	expectSearch(t, added, "translate this text", "deepl.translate_text")
	expectSearch(t, added, "weather forecast", "weather.get-forecast")
	if got, want := added.Len(), base.Len()+1; got != want {
		t.Errorf("Len after add = %d, want %d", got, want)
	}

	removed := added.With(nil, "weather")
	for _, q := range []string{"weather forecast", "wether", "get-alerts", "getforcast"} {
		for _, h := range removed.Search(q, Options{Limit: 50}) {
			if strings.HasPrefix(h.ID, "weather.") {
				t.Errorf("%q found removed tool %s (tier %s)", q, h.ID, h.Tier)
			}
		}
	}
	expectSearch(t, removed, "translate this text", "deepl.translate_text") // earlier additions stay
	if _, ok := removed.DocByID("weather.get-alerts"); ok {
		t.Error("DocByID finds a removed tool")
	}
	if slices.ContainsFunc(allIDs(removed), func(id string) bool { return strings.HasPrefix(id, "weather.") }) {
		t.Errorf("Doc lists removed tools: %v", allIDs(removed))
	}

	// Re-registering a base backend replaces its tools: one listing per ID,
	// and the new description is the one searched.
	replaced := base.With([]Doc{weather2})
	hits := replaced.Search("seven-day hourly forecast", Options{Limit: 50})
	if len(hits) == 0 || hits[0].ID != "weather.get-forecast" {
		t.Fatalf("replaced tool not found first: %v", ids(hits))
	}
	ids := allIDs(replaced)
	if len(ids) != len(slices.Compact(slices.Clone(ids))) {
		t.Errorf("an ID is listed twice: %v", ids)
	}
	if _, ok := replaced.DocByID("weather.get-alerts"); ok {
		t.Error("a replaced backend keeps tools it no longer publishes")
	}
	if d, _ := replaced.DocByID("weather.get-forecast"); !strings.HasPrefix(d.Description, "Seven-day") {
		t.Errorf("DocByID returns the base version: %q", d.Description)
	}

	// base itself is unchanged by any of this.
	expectSearch(t, base, "get weather alerts", "weather.get-alerts")
	if _, ok := base.DocByID("deepl.translate_text"); ok {
		t.Error("With modified its receiver")
	}
}

// Hidden tools leave the document frequencies: a word only a removed
// backend used stops matching, and idf is what an index built without that
// backend computes.
func TestWithStatistics(t *testing.T) {
	docs := corpus()
	without := slices.DeleteFunc(slices.Clone(docs), func(d Doc) bool { return d.Backend == "github" })
	cfg := DefaultConfig()
	cfg.BackendWeight = 0 // backend documents have their own corpus averages
	full := BuildWith(docs, cfg).With(nil, "github")
	fresh := BuildWith(without, cfg)
	// "github repository": "keyword" would find cn.bing_search by the
	// English gloss of its Chinese description.
	if got := full.Search("github repository", Options{}); len(got) != 0 && got[0].Tier == TierBM25 {
		t.Errorf("a removed backend's words still match: %v", ids(got))
	}
	for _, q := range []string{"weather", "file", "search web page", "create"} {
		sc := full.getScratch()
		full.queryTerms(sc, q)
		for i := range sc.unigrams {
			term := sc.term(i)
			df := 0
			for _, seg := range full.segs {
				if ti := seg.tools.find(term); ti >= 0 {
					df += int(seg.tools.postOff[ti+1] - seg.tools.postOff[ti])
				}
			}
			df -= full.hiddenDF[string(term)]
			want := 0
			if ti := fresh.base.tools.find(term); ti >= 0 {
				want = int(fresh.base.tools.postOff[ti+1] - fresh.base.tools.postOff[ti])
			}
			if df != want || full.liveDocs != fresh.liveDocs {
				t.Errorf("%q: df %d of %d docs, want %d of %d", term, df, full.liveDocs, want, fresh.liveDocs)
			}
		}
	}
}

func TestWithChained(t *testing.T) {
	base := Build(corpus())
	a := NewDoc("a", "alpha_tool", "", "Alpha widget maker.", nil)
	b := NewDoc("b", "beta_tool", "", "Beta widget maker.", nil)
	ix := base.With([]Doc{a}).With([]Doc{b}).With(nil, "a")
	if diff := cmp.Diff([]string{"b.beta_tool"}, ids(ix.Search("widget", Options{}))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	ix = ix.With([]Doc{a, a})
	got := ids(ix.Search("widget maker", Options{}))
	slices.Sort(got)
	if diff := cmp.Diff([]string{"a.alpha_tool", "b.beta_tool"}, got); diff != "" {
		t.Errorf("re-added (-want +got):\n%s", diff)
	}
	// Removing a base backend and re-adding it later serves the new tools.
	ix = ix.With(nil, "files").With([]Doc{NewDoc("files", "read_file", "", "Read bytes.", nil)})
	expectSearch(t, ix, "read bytes", "files.read_file")
	if _, ok := ix.DocByID("files.write_file"); ok {
		t.Error("files.write_file came back with the re-registered backend")
	}
	if got, want := ix.Len(), base.Len()-3+1+2; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
}
