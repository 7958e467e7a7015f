// Package semantic is the embedding tier of search_tools: nearest tools by
// cosine similarity of text embeddings, fused with the lexical ranking by
// Reciprocal Rank Fusion.
//
// Tool vectors are computed once, at emit time, from ToolText(name,
// description) and frozen in generated/ (Vectors.MarshalBinary, Load); at
// run time only the query is embedded. The vectors record the sha256 of the
// model that produced them, and Vectors.Check refuses another model: vectors
// from two models share no space, so a mismatch would rank at random.
//
// In SEMANTIC=1 builds search_tools ranks with Searcher: the lexical
// index's ranking and the nearest vectors, each cut to MinCandidates, fused
// by Fuse. Its With mirrors search.Index.With and embeds tools registered
// at run time.
//
// Embeddings come from github.com/kelindar/search, whose package init
// dlopens libllama_go.so and panics without it. Only files built with the
// `semantic` tag import it (make build SEMANTIC=1, after make llama); the
// default build is pure Go, where Open returns ErrUnavailable and search
// stays lexical. Everything else here (vectors, cosine, fusion) is pure Go
// and always built.
package semantic
