package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpus is a small fleet with the shapes that matter: snake, kebab and
// camel names, shared words across backends, Chinese descriptions.
func corpus() []Doc {
	return []Doc{
		NewDoc("web", "web_search", "", "Search the web with a query and return result links.", []byte(`{"properties":{"query":{"description":"Search terms"},"count":{"description":"Number of results"}}}`)),
		NewDoc("web", "fetch_page", "", "Fetch a web page and return its text.", []byte(`{"properties":{"url":{"description":"Page URL"}}}`)),
		NewDoc("files", "read_file", "", "Read the complete contents of a file from disk.", []byte(`{"properties":{"path":{"description":"File path"}}}`)),
		NewDoc("files", "write_file", "", "Create or overwrite a file with new content.", []byte(`{"properties":{"path":{}, "content":{}}}`)),
		NewDoc("files", "listDirectory", "List Directory", "List the entries of a directory.", nil),
		NewDoc("weather", "get-forecast", "", "Get the weather forecast for a city.", []byte(`{"properties":{"city":{"description":"City name"}}}`)),
		NewDoc("weather", "get-alerts", "", "Get active weather alerts for a US state.", nil),
		NewDoc("github", "create_issue", "", "Create a new issue in a GitHub repository.", nil),
		NewDoc("github", "search_repositories", "", "Find GitHub repositories by keyword.", nil),
		NewDoc("cn", "bing_search", "", "使用必应搜索指定的关键词，并返回搜索结果列表", nil),
		NewDoc("cn", "weather_report", "", "查询北京天气预报", nil),
		NewDoc("cn", "city_list", "", "列出北方的城市和天空的预测", nil),
	}
}

func ids(hits []Hit) []string {
	out := make([]string, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// expectSearch checks the first len(want) hits of q, in order.
func expectSearch(t *testing.T, ix *Index, q string, want ...string) {
	t.Helper()
	got := ids(ix.Search(q, Options{Limit: len(want)}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Search(%q) (-want +got):\n%s", q, diff)
	}
}

// expectTier checks that every hit of q came from tier, and that there is one.
func expectTier(t *testing.T, ix *Index, q string, tier Tier) []Hit {
	t.Helper()
	hits := ix.Search(q, Options{})
	if len(hits) == 0 {
		t.Fatalf("Search(%q): no hits, want tier %s", q, tier)
	}
	for _, h := range hits {
		if h.Tier != tier {
			t.Errorf("Search(%q): hit %s from tier %s, want %s", q, h.ID, h.Tier, tier)
		}
	}
	return hits
}

func TestSearchTiers(t *testing.T) {
	ix := Build(corpus())
	tests := []struct {
		query string
		tier  Tier
		first string
	}{
		{"search the web", TierBM25, "web.web_search"},
		{"weather forecast for my city", TierBM25, "weather.get-forecast"},
		{"list directory entries", TierBM25, "files.listDirectory"},
		{"websrch", TierTrigram, "web.web_search"},                 // run-together words
		{"getforcast", TierTrigram, "weather.get-forecast"},        // partial match
		{"serch", TierFuzzy, "web.web_search"},                     // one edit from "search"
		{"repositries", TierTrigram, "github.search_repositories"}, // 7 of 9 trigrams
		{"alrts", TierFuzzy, "weather.get-alerts"},
		{"craete", TierFuzzy, "github.create_issue"}, // transposition
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits := expectTier(t, ix, tc.query, tc.tier)
			if hits[0].ID != tc.first {
				t.Errorf("first hit %s, want %s (all: %v)", hits[0].ID, tc.first, ids(hits))
			}
		})
	}
}

// A later tier runs only when every earlier one found nothing: a known word
// keeps the typo beside it from being corrected or trigram-matched.
func TestSearchTierOnlyWhenEarlierEmpty(t *testing.T) {
	ix := Build(corpus())
	for _, q := range []string{"serch weather", "websrch weather", "websrch serch directory"} {
		t.Run(q, func(t *testing.T) {
			for _, h := range expectTier(t, ix, q, TierBM25) {
				if strings.Contains(h.ID, "search") {
					t.Errorf("%s: %s can only come from tier 2 or 3", q, h.ID)
				}
			}
		})
	}
	// "serch" shares too few trigrams with any name for tier 2, so it
	// reaches tier 3; "websrch" is caught by tier 2 and never corrected.
	expectTier(t, ix, "serch", TierFuzzy)
	expectTier(t, ix, "websrch", TierTrigram)
	if hits := ix.Search("zzzz qqqq", Options{}); len(hits) != 0 {
		t.Errorf("nonsense query: got %v, want no hits", ids(hits))
	}
	if hits := ix.Search("", Options{}); len(hits) != 0 {
		t.Errorf("empty query: got %v, want no hits", ids(hits))
	}
}

func TestSearchRanking(t *testing.T) {
	ix := Build(corpus())
	tests := []struct {
		query string
		want  []string
	}{
		{"read a file", []string{"files.read_file"}},
		{"write content to a file", []string{"files.write_file"}},
		{"github issue", []string{"github.create_issue"}},
		{"fetch page URL", []string{"web.fetch_page"}},
		{"Get weather alerts", []string{"weather.get-alerts"}},
		{"reading files", []string{"files.read_file"}}, // stemming: reading→read, files→file
		{"北京天气", []string{"cn.weather_report"}},
		{"必应搜索", []string{"cn.bing_search"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) { expectSearch(t, ix, tc.query, tc.want...) })
	}
}

func TestSearchCJK(t *testing.T) {
	// cn.city_list holds 天 and 预 scattered; cn.weather_report holds the
	// phrase. Unigrams match both; bigrams match only the phrase.
	for _, tc := range []struct {
		mode CJKMode
		want []string
	}{
		{CJKUnigram, []string{"cn.city_list", "cn.weather_report"}},
		{CJKBigram, []string{"cn.weather_report"}},
		{CJKBoth, []string{"cn.city_list", "cn.weather_report"}},
	} {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.CJK = tc.mode
			got := ids(BuildWith(corpus(), cfg).Search("天气预", Options{}))
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.CJK = CJKBoth
	expectSearch(t, BuildWith(corpus(), cfg), "北京天气预报", "cn.weather_report", "cn.city_list")
}

func TestSearchBoost(t *testing.T) {
	docs := []Doc{
		{ID: "a.echo", Backend: "a", Name: "echo", Description: "Echo the input back."},
		{ID: "b.echo", Backend: "b", Name: "echo", Description: "Echo the input back."},
		{ID: "c.echo_twice", Backend: "c", Name: "echo_twice", Description: "Echo the input back twice, with extra words here."},
	}
	// Feedback would lend c.echo_twice's extra words to this tiny corpus.
	cfg := DefaultConfig()
	cfg.Feedback = Feedback{}
	ix := BuildWith(docs, cfg)
	expectSearch(t, ix, "echo input", "a.echo", "b.echo", "c.echo_twice") // ties break by ID
	usage := map[string]float64{"b.echo": 3, "c.echo_twice": 1.5}
	boost := func(id string) float64 {
		if u, ok := usage[id]; ok {
			return u
		}
		return 1
	}
	hits := ix.Search("echo input", Options{Boost: boost})
	if diff := cmp.Diff([]string{"b.echo", "a.echo", "c.echo_twice"}, ids(hits)); diff != "" {
		t.Errorf("boosted (-want +got):\n%s", diff)
	}
	plain := ix.Search("echo input", Options{})
	if got, want := hits[0].Score, 3*plain[1].Score; got != want {
		t.Errorf("boosted score %v, want 3 × %v", got, plain[1].Score)
	}
	// The boost reorders within a tier; it never lets tier 2 outrank tier 1.
	for _, h := range ix.Search("ecko", Options{Boost: boost}) {
		if h.Tier != TierFuzzy {
			t.Errorf("ecko: %s from tier %s", h.ID, h.Tier)
		}
	}
}

func TestSearchLimitAndDedupe(t *testing.T) {
	docs := append(corpus(), corpus()[0], corpus()[2])
	ix := Build(docs)
	if got, want := ix.Len(), len(corpus()); got != want {
		t.Errorf("Len() = %d, want %d (duplicate IDs dropped)", got, want)
	}
	hits := ix.Search("file web search page", Options{Limit: 100})
	seen := map[string]bool{}
	for _, h := range hits {
		if seen[h.ID] {
			t.Errorf("%s listed twice", h.ID)
		}
		seen[h.ID] = true
	}
	if n := len(ix.Search("file web search page", Options{Limit: 2})); n != 2 {
		t.Errorf("Limit 2: %d hits", n)
	}
	if n := len(ix.Search("get", Options{})); n > DefaultLimit {
		t.Errorf("default limit: %d hits", n)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hits out of order at %d: %v", i, hits)
		}
	}
}

func TestSearchMany(t *testing.T) {
	ix := Build(corpus())
	hits := ix.SearchMany([]string{"check the weather", "save the result to a file"}, Options{Limit: 4})
	got := ids(hits)
	for _, want := range []string{"weather.get-forecast", "files.write_file"} {
		if !slices.Contains(got, want) {
			t.Errorf("SearchMany: %s missing from %v", want, got)
		}
	}
	if len(got) != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
		t.Errorf("SearchMany listed a tool twice: %v", got)
	}
	if diff := cmp.Diff(ix.Search("websrch", Options{}), ix.SearchMany([]string{"websrch"}, Options{})); diff != "" {
		t.Errorf("one query must equal Search (-want +got):\n%s", diff)
	}
}

func TestDocAccessors(t *testing.T) {
	ix := Build(corpus())
	d, ok := ix.DocByID("web.web_search")
	if !ok {
		t.Fatal("DocByID(web.web_search) not found")
	}
	want := []Param{{"count", "Number of results"}, {"query", "Search terms"}}
	if diff := cmp.Diff(want, d.Params); diff != "" {
		t.Errorf("params sorted by name (-want +got):\n%s", diff)
	}
	if _, ok := ix.DocByID("web.nope"); ok {
		t.Error("DocByID(web.nope) found")
	}
	for i := 1; i < ix.Len(); i++ {
		if ix.Doc(i-1).ID >= ix.Doc(i).ID {
			t.Errorf("Doc order: %s before %s", ix.Doc(i-1).ID, ix.Doc(i).ID)
		}
	}
}

func TestNewDoc(t *testing.T) {
	tests := []struct {
		schema string
		want   []Param
	}{
		{`{"type":"object","properties":{"b":{"description":"B"},"a":{"type":"string"}}}`, []Param{{"a", ""}, {"b", "B"}}},
		{`{"properties":{"x":{"description":7}}}`, []Param{{"x", ""}}},
		{`{"properties":{"x":[1]}}`, []Param{{"x", ""}}},
		{`not json`, nil},
		{``, nil},
	}
	for _, tc := range tests {
		d := NewDoc("b", "t.x", "T", "D", []byte(tc.schema))
		if d.ID != "b.t.x" || d.Backend != "b" || d.Name != "t.x" {
			t.Errorf("NewDoc IDs: %+v", d)
		}
		if diff := cmp.Diff(tc.want, d.Params); diff != "" {
			t.Errorf("schema %s (-want +got):\n%s", tc.schema, diff)
		}
	}
}

func TestEmptyIndex(t *testing.T) {
	ix := Build(nil)
	data, err := ix.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range []*Index{ix, loaded} {
		if hits := ix.Search("anything at all", Options{}); hits != nil || ix.Len() != 0 {
			t.Errorf("empty index: %v, Len %d", hits, ix.Len())
		}
		grown := ix.With([]Doc{NewDoc("a", "tool", "", "does things", nil)})
		expectSearch(t, grown, "things", "a.tool")
		expectSearch(t, grown, "thngs", "a.tool")
	}
}

// Run with -race: searches share the index and its scratch free list.
func TestConcurrentSearch(t *testing.T) {
	ix := Build(corpus()).With([]Doc{NewDoc("deepl", "translate", "", "Translate text.", nil)})
	want := map[string][]Hit{}
	for _, q := range roundTripQueries {
		want[q] = ix.Search(q, Options{})
	}
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				q := roundTripQueries[(g+i)%len(roundTripQueries)]
				if diff := cmp.Diff(want[q], ix.Search(q, Options{})); diff != "" {
					t.Errorf("concurrent Search(%q) (-want +got):\n%s", q, diff)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// A repeated query word pairs with its first occurrence. Before, the pair
// pointed at a term never added: a query ending in a repeat panicked, and
// a repeat elsewhere paired the wrong words.
func TestSearchRepeatedWords(t *testing.T) {
	ix := Build(corpus())
	for _, q := range []string{"weather forecast weather", "file read file", "search web search web search", "file file"} {
		if hits := ix.Search(q, Options{}); len(hits) == 0 {
			t.Errorf("Search(%q): no hits", q)
		}
	}
	expectSearch(t, ix, "weather forecast weather", "weather.get-forecast")
}

// FuzzSearch: no query, however odd, panics a search or a try-also.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{"weather forecast weather", "read file", "websrch", "serch", "天气 天气", "", "a b a b a", strings.Repeat("x ", 300)} {
		f.Add(q)
	}
	ix := Build(corpus())
	f.Fuzz(func(t *testing.T, q string) {
		for _, h := range ix.Search(q, Options{Limit: 5}) {
			if h.ID == "" {
				t.Fatalf("Search(%q): hit without an ID", q)
			}
		}
		ix.TryAlso("web", q, 3)
	})
}
