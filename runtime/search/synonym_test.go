package search

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func synonymCorpus() []Doc {
	return []Doc{
		NewDoc("fs", "delete_file", "", "Delete a file from disk.", nil),
		NewDoc("fs", "remove_file", "", "Remove a file from disk.", nil),
		NewDoc("fs", "read_file", "", "Read a file from disk.", nil),
		NewDoc("media", "resize_image", "", "Resize an image, erase, delete or drop its metadata.", nil),
		NewDoc("notes", "append_note", "", "Append text to a note.", nil),
	}
}

func TestSynonymsFindOtherWords(t *testing.T) {
	cfg := DefaultConfig()
	ix := BuildWith(synonymCorpus(), cfg)
	// The tool with the query's own word first, then the one that names
	// the same operation in other words, above a tool without either.
	expectSearch(t, ix, "remove file", "fs.remove_file", "fs.delete_file", "fs.read_file")
	expectSearch(t, ix, "photo", "media.resize_image")

	cfg.Synonyms = 0
	off := BuildWith(synonymCorpus(), cfg)
	if got := ids(off.Search("photo", Options{})); slices.Contains(got, "media.resize_image") {
		t.Errorf("Synonyms 0 still expands: %v", got)
	}
}

// A word and its synonyms are one concept: a tool listing three synonyms
// of "remove" gains no more than one, and a tool holding "remove" itself
// gains nothing from them.
func TestSynonymsCountOnce(t *testing.T) {
	ix := Build(synonymCorpus())
	score := func(q, id string) float64 {
		for _, h := range ix.Search(q, Options{Limit: 10}) {
			if h.ID == id {
				return h.Score
			}
		}
		t.Fatalf("Search(%q): %s not found", q, id)
		return 0
	}
	expand := func(q string) []string {
		sc := ix.getScratch()
		defer ix.putScratch(sc)
		ix.queryTerms(sc, q)
		return ix.syn[string(sc.term(0))]
	}
	if s := expand("remove"); !slices.Contains(s, "delet") || !slices.Contains(s, "eras") {
		t.Fatalf("synonyms of remove: %v", s)
	}
	// remove_file's score for "remove" is its own word's: with or without
	// synonyms, the same.
	noSyn := DefaultConfig()
	noSyn.Synonyms = 0
	plain := BuildWith(synonymCorpus(), noSyn)
	want := plain.Search("remove", Options{})[0]
	if want.ID != "fs.remove_file" || score("remove", "fs.remove_file") != want.Score {
		t.Errorf("a tool holding the word gains from its synonyms: %v vs %v", score("remove", "fs.remove_file"), want)
	}
	// resize_image holds delete, erase and drop; its synonym score is
	// its best one's, below delete_file's.
	if a, b := score("remove", "media.resize_image"), score("remove", "fs.delete_file"); a >= b {
		t.Errorf("three synonyms summed: resize_image %v >= delete_file %v", a, b)
	}
}

func TestSynonymTermsStemmed(t *testing.T) {
	cfg := DefaultConfig()
	syn := synonymTerms(&cfg)
	// "images" and "photos" meet "image" and "photo" after stemming, so
	// the table is keyed by terms, not surface words.
	if diff := cmp.Diff(true, slices.Contains(syn["photo"], "imag")); diff != "" {
		t.Errorf("photo → %v", syn["photo"])
	}
	for t0, ss := range syn {
		if slices.Contains(ss, t0) {
			t.Errorf("%q is its own synonym", t0)
		}
	}
}

// Tools registered at run time are found by synonyms too, and a removed
// backend's tools are not.
func TestSynonymsOverlay(t *testing.T) {
	base := Build(synonymCorpus())
	ix := base.With([]Doc{NewDoc("img", "get_photo", "", "Get a photo by ID.", nil)}, "media")
	got := ids(ix.Search("picture", Options{}))
	if !slices.Equal(got, []string{"img.get_photo"}) {
		t.Errorf("Search(picture) on the overlay = %v, want [img.get_photo]", got)
	}
	if got := ids(ix.Search("erase", Options{})); slices.Contains(got, "media.resize_image") {
		t.Errorf("a removed backend's tool found by a synonym: %v", got)
	}
	if got := ids(ix.Search("erase", Options{Limit: 2})); !slices.Equal(got, []string{"fs.delete_file", "fs.remove_file"}) {
		t.Errorf("Search(erase) = %v, want delete_file and remove_file by synonyms", got)
	}
}
