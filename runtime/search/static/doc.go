// Package static is the static-embedding tier of search_tools: a vector
// per word, taken from an openly licensed word-vector set (GloVe-style
// text, or the wink-embeddings JSON on npm), and a text's vector is the
// weighted mean of its words' vectors with the tool set's common component
// removed. It needs no model runtime and no cgo, so the default build can
// rank by meaning; a query embeds by map lookups in microseconds.
//
// kiln-gen emit reads the full word-vector file (Read), cuts it to the
// words of the compiled tools plus the most frequent words (Cut), fits the
// common component on the compiled tools (Table.Fit) and freezes the
// result quantized to int8 (Table.MarshalBinary) with the source's name
// and sha256. At run time Load decodes it and NewEmbedder embeds tools and
// queries; Embedder satisfies semantic.Embedder, so runtime/search/semantic's
// Searcher fuses it with the lexical index exactly as it fuses a model.
//
// Weights are smooth inverse frequency (Arora et al. 2017), a/(a+p(w)),
// with p(w) estimated from the word's frequency rank by Zipf's law: the
// word-vector files list words most frequent first, so the weight needs no
// corpus of our own and a run-time tool is weighted like a compiled one.
package static
