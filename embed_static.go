package kiln

import "embed"

// staticFiles holds generated/searchindex/static.bin when kiln-gen emit ran
// with a word-vector file (gateway.vectors.file). As for the semantic
// vectors, the pattern also matches the always-present searchindex.gen.go,
// so a build without the tier still compiles; the default build's
// generated/ has no static.bin, so it adds only that file's few hundred
// bytes.
//
//go:embed generated/searchindex/s*
var staticFiles embed.FS

// StaticVectors returns the static word-vector tier kiln-gen emit froze
// next to the search index (runtime/search/static.Load decodes it), or
// false when emit ran without word vectors.
func StaticVectors() ([]byte, bool) {
	b, err := staticFiles.ReadFile("generated/searchindex/static.bin")
	return b, err == nil
}
