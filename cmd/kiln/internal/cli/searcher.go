package cli

import "github.com/kilnmcp/kiln/runtime/catalog"

// Searcher ranks tools for search_tools: the lexical index, or in SEMANTIC=1
// builds the lexical index fused with embeddings (openSearcher picks). It
// is the catalog's interface, so openSearcher's result goes straight into
// catalog.Options.Search, and With (run-time registration) keeps the
// fusion.
type Searcher = catalog.Searcher

func noClose() error { return nil }
