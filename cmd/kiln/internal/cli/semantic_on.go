//go:build semantic

package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/kilnmcp/kiln"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
)

// Start-up errors of a SEMANTIC=1 kiln whose configuration and compiled
// vectors disagree. Each names the key to change and the other way out.
var (
	errNoVectors = errors.New("gateway.semantic.model is set, but this kiln has no tool vectors compiled in: " +
		"run make generate SEMANTIC=1 (kiln-gen emit with the model) and make build SEMANTIC=1, or remove gateway.semantic.model")
	errNoModel = errors.New("gateway.semantic.model is not set, but this kiln has tool vectors compiled in")
)

// compiledVectors is a variable because go:embed fixes the vectors at build
// time and serve's test must freeze them with its own test model.
var compiledVectors = kiln.SemanticVectors

// fused adapts *semantic.Searcher, whose With returns its own type.
type fused struct{ *semantic.Searcher }

func (f fused) With(extra []search.Doc, removed ...string) Searcher {
	return fused{f.Searcher.With(extra, removed...)}
}

// openSearcher fuses the compiled index with the tool vectors compiled in
// by kiln-gen emit, embedding queries with gateway.semantic.model. Every
// disagreement between the configuration, the model file and the vectors
// is an error: a silent lexical fallback would hide a broken deployment.
// Without a model and without vectors it ranks lexically and says so in
// the log. The close function releases the model; call it after serving.
func openSearcher(cfg *config.Config, lex *search.Index, log *slog.Logger) (Searcher, func() error, error) {
	vectors, ok := compiledVectors()
	if cfg.Gateway.Semantic.Model == "" && !ok {
		frozen, have := compiledStatic()
		if s, err := openStatic(cfg.Gateway.Vectors, lex, frozen, have, log); err != nil || s != nil {
			return s, noClose, err
		}
	}
	return openFused(cfg.Gateway.Semantic, lex, vectors, ok, log)
}

func openFused(sc config.Semantic, lex *search.Index, frozen []byte, haveVectors bool, log *slog.Logger) (Searcher, func() error, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var v *semantic.Vectors
	if haveVectors {
		var err error
		if v, err = semantic.Load(frozen); err != nil {
			return nil, nil, fmt.Errorf("compiled semantic vectors: %w; run make generate SEMANTIC=1 and rebuild", err)
		}
	}
	switch {
	case sc.Model == "" && v == nil:
		log.Warn("this kiln is built with SEMANTIC=1 but gateway.semantic.model is not set: search_tools ranks lexically only")
		return catalog.Lexical(lex), noClose, nil
	case sc.Model == "":
		return nil, nil, fmt.Errorf("%w (model %s, sha256 %s): set gateway.semantic.model to that file and gateway.semantic.sha256 to its sha256, or build without SEMANTIC=1",
			errNoModel, v.Model, v.ModelSHA256)
	case v == nil:
		return nil, nil, errNoVectors
	case sc.SHA256 == "":
		sum, err := semantic.FileSHA256(sc.Model)
		if err != nil {
			return nil, nil, fmt.Errorf("gateway.semantic.model: %w; download the model (docs/search.md) or fix the path", err)
		}
		return nil, nil, fmt.Errorf("gateway.semantic.sha256 is not set: set it to %s after checking the origin of %s (the compiled vectors expect %s)",
			sum, sc.Model, v.ModelSHA256)
	}
	if err := v.Check(sc.Model, sc.SHA256); err != nil {
		return nil, nil, fmt.Errorf("gateway.semantic.sha256: %w", err)
	}
	e, err := semantic.Open(sc.Model, sc.SHA256, sc.Threads)
	switch {
	case errors.Is(err, semantic.ErrModelMismatch):
		return nil, nil, fmt.Errorf("gateway.semantic.sha256: %w", err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("gateway.semantic.model: %w; download the model (docs/search.md) or fix the path", err)
	case err != nil:
		return nil, nil, fmt.Errorf("gateway.semantic.model: %w", err)
	}
	s, err := semantic.NewSearcher(lex, v, e, semantic.SearcherOptions{Logger: log})
	if err != nil {
		e.Close()
		if errors.Is(err, semantic.ErrStale) {
			return nil, nil, fmt.Errorf("compiled semantic vectors: %w", err)
		}
		return nil, nil, fmt.Errorf("gateway.semantic.model: %w", err)
	}
	log.Info("semantic search on", "model", filepath.Base(sc.Model), "tools", len(v.IDs), "dim", v.Dim)
	return fused{s}, e.Close, nil
}
