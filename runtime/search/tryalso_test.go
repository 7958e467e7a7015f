package search

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// tryCorpus is corpus plus backends shaped for try-also: a filesystem
// server whose names repeat "file" and "directory", an audio backend with
// numbers, short words and boilerplate, and two one-word tools that tie.
func tryCorpus() []Doc {
	return append(corpus(),
		NewDoc("filesystem", "read_file", "", "Read the contents of a file.", nil),
		NewDoc("filesystem", "write_file", "", "Write content to a file.", nil),
		NewDoc("filesystem", "list_directory", "", "List the entries in a directory.", nil),
		NewDoc("filesystem", "create_directory", "", "Create a new directory.", nil),
		NewDoc("filesystem", "move_file", "", "Move or rename a file or directory.", nil),
		NewDoc("filesystem", "search_files", "", "Search for files matching a pattern.", nil),
		NewDoc("audio", "to_wav", "", "Returns the MP3 as WAV at 44100 Hz, using your ffmpeg.", nil),
		NewDoc("tie", "zebra", "", "", nil),
		NewDoc("tie", "yak", "", "", nil),
	)
}

// expectTryAlso checks TryAlso(backend, query, n).
func expectTryAlso(t *testing.T, ix *Index, backend, query string, n int, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, ix.TryAlso(backend, query, n)); diff != "" {
		t.Errorf("TryAlso(%q, %q, %d) (-want +got):\n%s", backend, query, n, diff)
	}
}

func TestTryAlso(t *testing.T) {
	ix := Build(tryCorpus())
	tests := []struct {
		backend, query string
		n              int
		want           []string
	}{
		// "file" is in four names, "directory" in two names and a
		// description, "move" in one name and nowhere else in the index.
		{"filesystem", "", 3, []string{"file", "directory", "move"}},
		// Query words are compared stemmed: "files" drops "file",
		// "directories" drops "directory".
		{"filesystem", "copy files", 2, []string{"directory", "move"}},
		{"filesystem", "list directories", 1, []string{"file"}},
		{"filesystem", "file directory move", 1, []string{"read"}},
		// Numbers, words under three letters and boilerplate are dropped;
		// "mp3" has letters.
		{"audio", "", 12, []string{"wav", "ffmpeg", "mp3"}},
		{"tie", "", 5, []string{"yak", "zebra"}}, // equal scores: by term
		{"tie", "yaks", 5, []string{"zebra"}},
		{"filesystem", "", 0, nil},
		{"filesystem", "", -1, nil},
		{"nosuch", "", 3, nil},
		{"", "", 3, nil},
		{"tie", "yak zebra", 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.backend+"/"+tc.query, func(t *testing.T) {
			expectTryAlso(t, ix, tc.backend, tc.query, tc.n, tc.want)
		})
	}
}

// Every suggestion obeys the rules whatever the backend: no word of the
// backend's name, no stop word, no number, nothing under three letters
// (two CJK characters), at most maxSuggest terms, and each word searches
// back to a tool of its backend.
func TestTryAlsoRules(t *testing.T) {
	ix := Build(tryCorpus())
	stop := map[string]bool{}
	for _, w := range strings.Fields(suggestStop) {
		stop[w] = true
	}
	cfg := ix.Config()
	for _, b := range ix.base.backendNames {
		got := ix.TryAlso(b, "", 100)
		if b != "tie" && len(got) == 0 {
			t.Errorf("%s: no suggestions", b)
		}
		if len(got) > maxSuggest {
			t.Errorf("%s: %d suggestions, want at most %d", b, len(got), maxSuggest)
		}
		own := tokens(cfg, b)
		for _, w := range got {
			term := tokens(cfg, w)
			switch {
			case len(term) != 1:
				t.Errorf("%s: %q is not one term: %q", b, w, term)
			case slices.Contains(own, term[0]):
				t.Errorf("%s: %q is the backend's own name", b, w)
			case stop[w] || strings.Trim(w, "0123456789") == "":
				t.Errorf("%s: %q is a stop word or a number", b, w)
			case utf8.RuneCountInString(w) < 2 || utf8.RuneCountInString(w) == 2 && w[0] < utf8.RuneSelf:
				t.Errorf("%s: %q is too short", b, w)
			}
			if !slices.ContainsFunc(ix.Search(w, Options{Limit: 50}), func(h Hit) bool {
				d, _ := ix.DocByID(h.ID)
				return d.Backend == b
			}) {
				t.Errorf("%s: %q finds none of its tools", b, w)
			}
		}
	}
}

// CJK pairs seen once mostly straddle two words; a recurring pair stays.
func TestTryAlsoCJK(t *testing.T) {
	got := Build(tryCorpus()).TryAlso("cn", "", maxSuggest)
	if !slices.Contains(got, "搜索") {
		t.Errorf("TryAlso(cn) = %q, want 搜索 (in bing_search twice)", got)
	}
	if slices.Contains(got, "索指") {
		t.Errorf("TryAlso(cn) = %q, holds 索指, seen once across two words", got)
	}
}

func TestTryAlsoWith(t *testing.T) {
	docs := tryCorpus()
	base := Build(docs)
	deepl := []Doc{
		NewDoc("deepl", "translate_text", "", "Translate text into another language.", nil),
		NewDoc("deepl", "list_languages", "", "List the languages translation supports.", nil),
	}
	radar := NewDoc("weather", "radar_map", "", "Rain radar map for a region.", nil)

	added := base.With(deepl)
	// The overlay ranks against the same document frequencies a fresh
	// build of the whole fleet has, so both agree.
	fresh := Build(append(slices.Clone(docs), deepl...))
	for _, q := range []string{"", "translate", "languages"} {
		want := fresh.TryAlso("deepl", q, 5)
		if len(want) == 0 {
			t.Fatalf("fresh build: no suggestions for deepl")
		}
		expectTryAlso(t, added, "deepl", q, 5, want)
	}
	expectTryAlso(t, added, "filesystem", "", 2, []string{"file", "directory"})

	removed := added.With(nil, "filesystem", "deepl")
	expectTryAlso(t, removed, "filesystem", "", 3, nil)
	expectTryAlso(t, removed, "deepl", "", 3, nil)
	expectTryAlso(t, removed, "tie", "", 1, []string{"yak"})

	replaced := base.With([]Doc{radar})
	got := replaced.TryAlso("weather", "", maxSuggest)
	if !slices.Contains(got, "radar") || slices.Contains(got, "forecast") {
		t.Errorf("re-registered weather: TryAlso = %q, want radar and no forecast", got)
	}
	if !slices.Contains(base.TryAlso("weather", "", maxSuggest), "forecast") {
		t.Error("With changed its receiver's suggestions")
	}
}

// Load rejects try-also lists that a damaged (but checksummed) file could
// hold: a term outside the tool table, or more terms than a backend keeps.
func TestLoadTryAlsoErrors(t *testing.T) {
	tests := []struct {
		name   string
		damage func(s *segment)
	}{
		{"unknown term", func(s *segment) { s.suggest[0].term = uint32(s.tools.numTerms()) }},
		{"too many terms", func(s *segment) {
			for b := 1; b < len(s.suggestOff); b++ {
				s.suggestOff[b] = max(s.suggestOff[b], maxSuggest+1)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(tryCorpus())
			if len(ix.base.suggest) <= maxSuggest {
				t.Fatalf("corpus has %d suggestions, want over %d", len(ix.base.suggest), maxSuggest)
			}
			tc.damage(ix.base)
			data, err := ix.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := Load(data); !errors.Is(err, ErrCorrupt) || got != nil {
				t.Errorf("Load = %v, %v; want %v", got, err, ErrCorrupt)
			}
		})
	}
}
