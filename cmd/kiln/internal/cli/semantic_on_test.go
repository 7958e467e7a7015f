//go:build semantic

package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/semantic/semantictest"
)

var onDocs = []search.Doc{
	search.NewDoc("fs", "read_file", "", "Read the complete contents of a file from disk.", nil),
	search.NewDoc("weather", "get_forecast", "", "Get the weather forecast for a city.", nil),
	search.NewDoc("mail", "send_email", "", "Send an email message to a recipient.", nil),
}

var corpus = []string{
	"read_file Read the complete contents of a file from disk.",
	"get_forecast Get the weather forecast for a city.",
	"send_email Send an email message to a recipient.",
	"translate_text Translate text into another language.",
}

// tinyModel writes a test model and returns its path and sha256.
func tinyModel(t *testing.T, seed uint64) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	b := semantictest.Tiny
	b.Seed = seed
	sum, err := b.WriteModel(path, corpus)
	if err != nil {
		t.Fatal(err)
	}
	return path, sum
}

// frozenVectors is what kiln-gen emit would compile in for docs.
func frozenVectors(t *testing.T, path, sum string, docs []search.Doc) []byte {
	t.Helper()
	e, err := semantic.Open(path, sum, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var ids, texts []string
	for _, d := range docs {
		ids = append(ids, d.ID)
		texts = append(texts, semantic.ToolText(d.Name, d.Description))
	}
	v, err := semantic.BuildVectors(e, ids, texts, filepath.Base(path), sum)
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenFusedErrors(t *testing.T) {
	path, sum := tinyModel(t, 1)
	other, otherSum := tinyModel(t, 2)
	vectors := frozenVectors(t, path, sum, onDocs)
	lex := search.Build(onDocs)
	swapped := filepath.Join(t.TempDir(), "tiny.gguf")
	if b, err := os.ReadFile(other); err != nil || os.WriteFile(swapped, b, 0o644) != nil {
		t.Fatal("copy model")
	}
	tests := []struct {
		name     string
		sc       config.Semantic
		vectors  []byte
		lex      *search.Index
		is       error
		mentions []string
	}{
		{"vectors without a model", config.Semantic{}, vectors, lex, errNoModel, []string{"tiny.gguf", sum, "gateway.semantic.sha256"}},
		{"model without vectors", config.Semantic{Model: path, SHA256: sum}, nil, lex, errNoVectors, []string{"make generate SEMANTIC=1"}},
		{"no sha256", config.Semantic{Model: path}, vectors, lex, nil, []string{"gateway.semantic.sha256 is not set", sum}},
		{"vectors of another model", config.Semantic{Model: other, SHA256: otherSum}, vectors, lex, semantic.ErrModelMismatch,
			[]string{"gateway.semantic.sha256", otherSum, sum, "make generate"}},
		{"model file swapped", config.Semantic{Model: swapped, SHA256: sum}, vectors, lex, semantic.ErrModelMismatch,
			[]string{"gateway.semantic.sha256", swapped, otherSum}},
		{"model file missing", config.Semantic{Model: filepath.Join(t.TempDir(), "gone.gguf"), SHA256: sum}, vectors, lex, fs.ErrNotExist,
			[]string{"gateway.semantic.model", "download"}},
		{"malformed vectors", config.Semantic{Model: path, SHA256: sum}, vectors[:len(vectors)-3], lex, semantic.ErrFormat,
			[]string{"compiled semantic vectors"}},
		{"stale vectors", config.Semantic{Model: path, SHA256: sum}, vectors, search.Build(onDocs[:2]), semantic.ErrStale,
			[]string{"compiled semantic vectors", "make generate SEMANTIC=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, closeFn, err := openFused(tc.sc, tc.lex, tc.vectors, tc.vectors != nil, nil)
			if err == nil {
				closeFn()
				t.Fatalf("openFused = %T, want an error", s)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestOpenFused(t *testing.T) {
	path, sum := tinyModel(t, 1)
	vectors := frozenVectors(t, path, sum, onDocs)
	lex := search.Build(onDocs)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	s, closeFn, err := openFused(config.Semantic{}, lex, nil, false, log)
	if err != nil {
		t.Fatalf("no model, no vectors: %v", err)
	}
	if _, ok := s.(fused); ok || !strings.Contains(logs.String(), "ranks lexically only") {
		t.Errorf("no model, no vectors: %T, log %q; want a logged lexical searcher", s, logs.String())
	}
	closeFn()

	s, closeFn, err = openFused(config.Semantic{Model: path, SHA256: strings.ToUpper(sum), Threads: 1}, lex, vectors, true, log)
	if err != nil {
		t.Fatalf("openFused: %v", err)
	}
	if _, ok := s.(fused); !ok {
		t.Fatalf("openFused = %T, want the fused searcher", s)
	}
	hits := s.Search("weather forecast for a city", search.Options{Limit: 3})
	if len(hits) == 0 || hits[0].ID != "weather.get_forecast" {
		t.Errorf("Search = %v, want weather.get_forecast first", hits)
	}
	// A run-time tool is embedded by With and reaches the semantic side:
	// a query of its exact text ranks it first there too.
	added := s.With([]search.Doc{search.NewDoc("deepl", "translate_text", "", "Translate text into another language.", nil)}, "mail")
	hits = added.Search("translate text into another language", search.Options{Limit: 10})
	if len(hits) == 0 || hits[0].ID != "deepl.translate_text" {
		t.Errorf("after With: %v, want deepl.translate_text first", hits)
	}
	for _, h := range hits {
		if h.ID == "mail.send_email" {
			t.Errorf("the removed mail backend is still found (%s)", h.Tier)
		}
	}
	if err := closeFn(); err != nil {
		t.Errorf("close: %v", err)
	}
	// After close a query cannot be embedded: it is ranked lexically and
	// the failure logged, never a panic.
	logs.Reset()
	if hits := s.Search("send an email", search.Options{}); len(hits) == 0 || hits[0].ID != "mail.send_email" || hits[0].Tier != search.TierBM25 {
		t.Errorf("Search after close = %v", hits)
	}
	if !strings.Contains(logs.String(), "embedder is closed") {
		t.Errorf("log after close: %q", logs.String())
	}
}

// TestOpenSearcherCompiledVectors runs the real entry point against what
// this tree compiled in.
func TestOpenSearcherCompiledVectors(t *testing.T) {
	path, sum := tinyModel(t, 1)
	cfg := &config.Config{}
	cfg.Gateway.Semantic = config.Semantic{Model: path, SHA256: sum}
	_, have := kiln.SemanticVectors()
	s, closeFn, err := openSearcher(cfg, search.Build(onDocs), nil)
	if err == nil {
		closeFn()
	}
	switch {
	case !have && !errors.Is(err, errNoVectors):
		t.Errorf("no vectors compiled in: openSearcher = %T, %v; want errNoVectors", s, err)
	case have && err == nil:
		t.Errorf("vectors compiled in for other tools and model: openSearcher accepted the test model")
	}
}
