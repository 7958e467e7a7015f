package cli

import (
	"fmt"
	"log/slog"

	"github.com/kilnmcp/kiln"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// compiledStatic is a variable because go:embed fixes the table at build
// time and the tests must serve one of their own.
var compiledStatic = kiln.StaticVectors

// staticFused adapts *semantic.Searcher, whose With returns its own type.
type staticFused struct{ *semantic.Searcher }

func (f staticFused) With(extra []search.Doc, removed ...string) Searcher {
	return staticFused{f.Searcher.With(extra, removed...)}
}

// fusions maps gateway.vectors.fusion to the searcher's fusion.
var fusions = map[string]semantic.Fusion{"rrf": semantic.FuseRRF, "linear": semantic.FuseLinear, "rerank": semantic.FuseRerank}

// openStatic fuses lex with the static word-vector tier when kiln-gen emit
// compiled one in, and returns nil otherwise. The compiled tools are
// embedded now, by lookup: for 50,000 tools that costs less than reading
// frozen vectors would save, and a vector can never be stale. Tools
// registered at run time are embedded by the searcher's With.
func openStatic(vc config.Vectors, lex *search.Index, frozen []byte, ok bool, log *slog.Logger) (Searcher, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !ok {
		if vc.File != "" {
			// The key is read by kiln-gen emit; a binary built without it
			// must say so rather than rank lexically in silence.
			log.Warn("gateway.vectors.file is set, but this kiln was built without static word vectors; search_tools ranks by words only",
				"file", vc.File, "fix", "kiln-gen emit --config FILE (or make emit VECTORS=1), then make build")
		}
		return nil, nil
	}
	t, err := static.Load(frozen)
	if err != nil {
		return nil, fmt.Errorf("compiled static word vectors: %w; run kiln-gen emit again and rebuild", err)
	}
	e := static.NewEmbedder(t)
	ids, texts := make([]string, lex.Len()), make([]string, lex.Len())
	for i := range lex.Len() {
		d := lex.Doc(i)
		ids[i], texts[i] = d.ID, semantic.ToolText(d.Name, d.Description)
	}
	v, err := semantic.BuildVectors(e, ids, texts, t.Source, t.SHA256)
	if err != nil {
		return nil, fmt.Errorf("static word vectors: %w", err)
	}
	s, err := semantic.NewSearcher(lex, v, e, semantic.SearcherOptions{Logger: log, Fusion: fusions[vc.Fusion], Depth: vc.Depth, Weight: static.DefaultWeight})
	if err != nil {
		return nil, fmt.Errorf("static word vectors: %w", err)
	}
	log.Info("search_tools fuses static word vectors", "source", t.Source, "sha256", t.SHA256, "words", t.Len(), "fusion", vc.Fusion)
	return staticFused{s}, nil
}
