//go:build !semantic

package cli

import (
	"errors"
	"log/slog"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search"
)

// errNotBuilt reports a semantic model configured for a pure-Go kiln: it
// cannot embed, and ranking lexically instead would hide the mistake.
var errNotBuilt = errors.New("gateway.semantic.model is set, but this kiln was built without SEMANTIC=1; rebuild with make build SEMANTIC=1 or remove gateway.semantic.model")

// openSearcher returns the lexical index, fused with the static word
// vectors when emit compiled them in: this build has no embedding runtime
// (semantic_on.go is the SEMANTIC=1 variant). The close function releases
// what the searcher holds; call it after serving.
func openSearcher(cfg *config.Config, lex *search.Index, log *slog.Logger) (Searcher, func() error, error) {
	if cfg.Gateway.Semantic.Model != "" {
		return nil, nil, errNotBuilt
	}
	frozen, ok := compiledStatic()
	if s, err := openStatic(cfg.Gateway.Vectors, lex, frozen, ok, log); err != nil || s != nil {
		return s, noClose, err
	}
	return catalog.Lexical(lex), noClose, nil
}
