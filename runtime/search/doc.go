// Package search finds tools for a natural-language task without a model.
//
// It ranks in three tiers, each tried only when the one before returned
// nothing: BM25F over a tool's name, backend, title, description and
// parameters; trigram similarity of the query against tool names (partial or
// run-together words, "websrch" → web_search); then Levenshtein correction of
// unknown query words against the vocabulary ("serch" → search). A caller's
// usage boost multiplies scores within a tier.
//
// Lifecycle: kiln-gen emit calls Build and MarshalBinary and embeds the bytes;
// the gateway calls Load at start-up (decoding only: postings, statistics and
// per-posting weights are stored precomputed), then Search from any
// goroutine. Tools added or removed at run time go through With, which
// returns a new Index layering a small overlay on the frozen base; the base
// is never rebuilt and an ID is never listed twice.
package search
