package search

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// assocCorpus has three weather tools that say "weather" and "forecast",
// one that says only "forecast", and tools about other things, so
// "weather" and "forecast" are associated by the fleet's own texts.
func assocCorpus() []Doc {
	return []Doc{
		NewDoc("owm", "current_weather", "", "Current weather and forecast for a city.", nil),
		NewDoc("owm", "weather_alerts", "", "Weather alerts and the forecast of storms.", nil),
		NewDoc("met", "weather_report", "", "A weather report with the forecast for a region.", nil),
		NewDoc("met", "hourly", "", "Hourly forecast of rain and wind.", nil),
		NewDoc("fs", "read_file", "", "Read a file from disk.", nil),
		NewDoc("fs", "write_file", "", "Write a file to disk.", nil),
		NewDoc("fs", "list_dir", "", "List a directory of files on disk.", nil),
		NewDoc("web", "fetch_page", "", "Fetch a web page.", nil),
		NewDoc("web", "search", "", "Search the web for pages.", nil),
	}
}

func assocConfig() Config {
	c := DefaultConfig()
	c.Synonyms = 0 // only associations widen the query's words
	c.Assoc = DefaultConfig().Assoc
	return c
}

func TestAssocTermsLearned(t *testing.T) {
	cfg := assocConfig()
	tk := &tokenizer{cfg: &cfg}
	docs := assocCorpus()
	per := make([]docTerms, len(docs))
	for i := range docs {
		per[i] = analyze(tk, &cfg, &docs[i])
	}
	got := assocTerms(cfg.Assoc, per)
	// weather is in 3 tools, all of which say forecast (in 4); disk,
	// file and the backend fs share 3 tools. Words in fewer than 3 tools
	// are in no pair.
	want := map[string][]string{
		"weather":  {"forecast"},
		"forecast": {"weather"},
		"disk":     {"file", "fs"},
		"file":     {"disk", "fs"},
		"fs":       {"disk", "file"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assocTerms (-want +got):\n%s", diff)
	}
	slices.Reverse(per)
	if diff := cmp.Diff(got, assocTerms(cfg.Assoc, per)); diff != "" {
		t.Errorf("assocTerms depends on tool order (-first +reversed):\n%s", diff)
	}
}

func TestAssocDeterministic(t *testing.T) {
	docs := assocCorpus()
	a, _ := BuildWith(docs, assocConfig()).MarshalBinary()
	for range 5 { // map order differs from run to run
		rev := slices.Clone(docs)
		slices.Reverse(rev)
		b, _ := BuildWith(rev, assocConfig()).MarshalBinary()
		if !bytes.Equal(a, b) {
			t.Fatal("MarshalBinary with associations depends on input order or map order")
		}
	}
}

// A tool gains its words' associates, so "weather" finds the tool that
// says only "forecast", below the tools that say "weather".
func TestAssocFindsAssociate(t *testing.T) {
	ix := BuildWith(assocCorpus(), assocConfig())
	got := ids(ix.Search("weather", Options{}))
	if len(got) != 4 || got[3] != "met.hourly" {
		t.Errorf("Search(weather) = %v, want the three weather tools, then met.hourly", got)
	}
	off := assocConfig()
	off.Assoc = Assoc{}
	if got := ids(BuildWith(assocCorpus(), off).Search("weather", Options{})); slices.Contains(got, "met.hourly") {
		t.Errorf("Assoc off still expands: %v", got)
	}
}

// A tool never gains a word it holds: its score for that word is its own,
// as without associations, and so is the word's idf.
func TestAssocNotAddedTwice(t *testing.T) {
	on := BuildWith(assocCorpus(), assocConfig())
	off := assocConfig()
	off.Assoc = Assoc{}
	plain := BuildWith(assocCorpus(), off)
	for _, q := range []string{"weather", "forecast", "disk"} {
		want := plain.Search(q, Options{})
		got := on.Search(q, Options{Limit: len(want)})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Search(%q): the tools holding the word score otherwise (-without +with):\n%s", q, diff)
		}
	}
	for i := range on.base.docs {
		d := &on.base.docs[i]
		for j := range on.base.exp.numTerms() {
			term := on.base.exp.term(j)
			if !slices.Contains(on.base.exp.postDoc[on.base.exp.postOff[j]:on.base.exp.postOff[j+1]], uint32(i)) {
				continue
			}
			if k := on.base.tools.find([]byte(term)); k >= 0 && slices.Contains(on.base.tools.postDoc[on.base.tools.postOff[k]:on.base.tools.postOff[k+1]], uint32(i)) {
				t.Errorf("%s holds %q and gains it by expansion", d.ID, term)
			}
		}
	}
}

// A loaded index keeps its associations: a tool registered at run time
// expands with the base's, as a built one does.
func TestAssocOverlayAfterLoad(t *testing.T) {
	built := BuildWith(assocCorpus(), assocConfig())
	data, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	extra := []Doc{NewDoc("sky", "tomorrow", "", "Tomorrow's forecast.", nil)}
	for name, ix := range map[string]*Index{"built": built, "loaded": loaded} {
		got := ids(ix.With(extra).Search("weather", Options{}))
		if !slices.Contains(got, "sky.tomorrow") {
			t.Errorf("%s: Search(weather) with a run-time forecast tool = %v, want sky.tomorrow", name, got)
		}
	}
}

func TestCapExp(t *testing.T) {
	dt := docTerms{exp: map[string]float32{"rain": 1, "wind": 3, "storm": 2, "cloud": 2, "fog": 1}}
	capExp(&dt, 3)
	// The words lent by the most own words; a tie goes to the first term.
	want := map[string]float32{"wind": 3, "cloud": 2, "storm": 2}
	if diff := cmp.Diff(want, dt.exp); diff != "" {
		t.Errorf("capExp (-want +got):\n%s", diff)
	}
	capExp(&dt, 0)
	if len(dt.exp) != 3 {
		t.Errorf("capExp 0 dropped words: %v", dt.exp)
	}
}

// A tool stating more than MaxWords words of its own gains none.
func TestAssocMaxWords(t *testing.T) {
	cfg := assocConfig()
	cfg.Assoc.MaxWords = 4 // met.hourly states 5: hourly, met, forecast, rain, wind
	ix := BuildWith(assocCorpus(), cfg)
	if got := ids(ix.Search("weather", Options{})); slices.Contains(got, "met.hourly") {
		t.Errorf("a tool over MaxWords was expanded: %v", got)
	}
	cfg.Assoc.MaxWords = 20
	ix = BuildWith(assocCorpus(), cfg)
	if got := ids(ix.Search("weather", Options{})); !slices.Contains(got, "met.hourly") {
		t.Errorf("a tool under MaxWords was not expanded: %v", got)
	}
}

// TestAssocSkipsManuals: a tool of more than maxSourceWords distinct
// words teaches no associations (learning is quadratic in a tool's
// words), while short tools sharing words still do.
func TestAssocSkipsManuals(t *testing.T) {
	cfg := assocConfig()
	tk := &tokenizer{cfg: &cfg}
	var manual strings.Builder
	for i := range maxSourceWords + 1 {
		fmt.Fprintf(&manual, "w%dx ", i)
	}
	docs := assocCorpus()
	for i := range 3 {
		docs = append(docs, NewDoc("big", fmt.Sprintf("manual%d", i), "", manual.String(), nil))
	}
	per := make([]docTerms, len(docs))
	for i := range docs {
		per[i] = analyze(tk, &cfg, &docs[i])
	}
	got := assocTerms(cfg.Assoc, per)
	if _, ok := got["w0x"]; ok {
		t.Errorf("words of tools over %d distinct words got associates: %v", maxSourceWords, got["w0x"])
	}
	if len(got["weather"]) == 0 {
		t.Errorf("the short tools' associations are gone: %v", got)
	}
}
