//go:build !semantic

package cli

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
)

func TestOpenSearcherPureGo(t *testing.T) {
	lex := search.Build([]search.Doc{search.NewDoc("fs", "read_file", "", "Read a file.", nil)})
	cfg := &config.Config{}
	cfg.Gateway.Semantic.Model = "/models/all-MiniLM-L6-v2.Q8_0.gguf"
	if s, _, err := openSearcher(cfg, lex, nil); !errors.Is(err, errNotBuilt) || s != nil {
		t.Errorf("openSearcher with a model in a pure-Go build = %v, %v; want errNotBuilt", s, err)
	}

	cfg.Gateway.Semantic.Model = ""
	s, closeFn, err := openSearcher(cfg, lex, nil)
	if err != nil {
		t.Fatalf("openSearcher without a model: %v", err)
	}
	if err := closeFn(); err != nil {
		t.Errorf("close: %v", err)
	}
	expectIDs(t, s, "read a file", "fs.read_file")
	added := s.With([]search.Doc{search.NewDoc("deepl", "translate", "", "Translate text.", nil)}, "fs")
	expectIDs(t, added, "translate text", "deepl.translate")
	for _, h := range added.Search("read a file", search.Options{}) {
		if h.ID == "fs.read_file" {
			t.Errorf("the removed backend's tool is still found (%s)", h.Tier)
		}
	}
	if got := added.TryAlso("deepl", "x", 3); len(got) == 0 {
		t.Error("TryAlso of a run-time backend is empty")
	}
}

// expectIDs checks the IDs s ranks for q, best first.
func expectIDs(t *testing.T, s Searcher, q string, want ...string) {
	t.Helper()
	var got []string
	for _, h := range s.Search(q, search.Options{Limit: len(want) + 1}) {
		got = append(got, h.ID)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Search(%q) (-want +got):\n%s", q, diff)
	}
}
