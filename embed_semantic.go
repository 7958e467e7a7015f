//go:build semantic

package kiln

import "embed"

// searchFiles holds generated/searchindex/vectors.bin when kiln-gen emit ran
// with a model. Emit writes that file only then, so no generated Go file can
// name it without breaking every build that lacks it; a pattern that also
// matches the always-present searchindex.gen.go (a few hundred bytes) never
// fails, and a missing vectors file becomes a start-up error instead.
//
//go:embed generated/searchindex/[sv]*
var searchFiles embed.FS

// SemanticVectors returns the semantic tool vectors kiln-gen emit froze
// next to the search index (runtime/search/semantic.Load decodes them), or
// false when emit ran without a model. Only SEMANTIC=1 builds carry them.
func SemanticVectors() ([]byte, bool) {
	b, err := searchFiles.ReadFile("generated/searchindex/vectors.bin")
	return b, err == nil
}
