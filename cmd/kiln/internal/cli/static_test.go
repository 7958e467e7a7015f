package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// smallVectors is a word-vector file as a test writes it: "rain" and
// "umbrella" lie near "weather", "note" near "write".
const smallVectors = `the 0.3 0.3 0.3 0.3
a 0.2 0.3 0.3 0.3
weather 1 0 0 0.1
rain 0.9 0.1 0 0
umbrella 0.8 0 0.1 0
forecast 0.95 0 0 0
city 0.3 0.3 0.2 0.3
map 0 1 0 0
write 0 0 1 0
note 0 0.1 0.9 0
`

// TestOpenStatic is the path from a word-vector file to search_tools: emit's
// cut and freeze, then kiln's load, embedding of compiled and run-time
// tools, and the configured fusion.
func TestOpenStatic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.txt")
	if err := os.WriteFile(path, []byte(smallVectors), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := static.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := []search.Doc{
		search.NewDoc("meteo", "city_forecast", "", "The weather forecast of a city.", nil),
		search.NewDoc("maps", "city_map", "", "A map of a city.", nil),
		search.NewDoc("notes", "write_note", "", "Write a note.", nil),
	}
	var texts []string
	for _, d := range docs {
		texts = append(texts, semantic.ToolText(d.Name, d.Description))
	}
	frozen, err := static.CutFor(raw, "vectors.txt", "ab", texts, 4).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	lex := search.Build(docs)
	vc := config.Vectors{Fusion: "rerank", Depth: 30}

	if s, err := openStatic(vc, lex, nil, false, nil); s != nil || err != nil {
		t.Errorf("openStatic without a compiled table = %v, %v; want nil, nil", s, err)
	}
	var logged bytes.Buffer
	withFile := vc
	withFile.File = "/vectors.txt"
	if s, err := openStatic(withFile, lex, nil, false, slog.New(slog.NewTextHandler(&logged, nil))); s != nil || err != nil ||
		!strings.Contains(logged.String(), "built without static word vectors") {
		t.Errorf("gateway.vectors.file without a compiled table: %v, %v, log %q; want nil, nil and a warning", s, err, logged.String())
	}
	if _, err := openStatic(vc, lex, frozen[:20], true, nil); !errors.Is(err, static.ErrFormat) {
		t.Errorf("openStatic of a cut table: %v, want ErrFormat", err)
	}
	for _, fusion := range []string{"rerank", "linear", "rrf"} {
		vc.Fusion = fusion
		s, err := openStatic(vc, lex, frozen, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		// No tool says "rain", so "city" ties the two city tools
		// lexically; "rain" is in the cut (one of the 4 most frequent
		// words) and its vector sides with the forecast.
		lexFirst := lex.Search("city rain", search.Options{Limit: 1})
		got := s.Search("city rain", search.Options{Limit: 3})
		if len(lexFirst) == 0 || lexFirst[0].ID == "meteo.city_forecast" {
			t.Fatalf("the words alone already rank %v first: the case tests nothing", lexFirst)
		}
		if len(got) == 0 || got[0].ID != "meteo.city_forecast" {
			t.Errorf("%s: Search = %v, want meteo.city_forecast first", fusion, got)
		}
		added := s.With([]search.Doc{search.NewDoc("jot", "city_jot", "", "Write a city note.", nil)})
		if got := added.Search("city note", search.Options{Limit: 1}); len(got) == 0 || got[0].ID != "jot.city_jot" {
			t.Errorf("%s: after With, Search = %v, want jot.city_jot", fusion, got)
		}
	}
}
