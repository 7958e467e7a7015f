//go:build !semantic

package semantic

import "fmt"

// Available reports whether this binary can embed text: true only in
// builds with the semantic tag (make build SEMANTIC=1).
const Available = false

// Open fails in builds without the semantic tag, where search stays
// lexical; the tagged build loads the model through llama.cpp.
func Open(modelPath, wantSHA256 string, threads int) (Embedder, error) {
	return nil, fmt.Errorf("open model %s: %w", modelPath, ErrUnavailable)
}
