// Package semantictest writes small GGUF BERT models for tests.
//
// No trained embedding model can be downloaded on Kiln's machines, so tests
// of the semantic tier load a model this package writes: a real GGUF v3
// file with llama.cpp's BERT metadata, WordPiece vocabulary and tensor
// names, whose deterministic weights make it behave as a bag of words. The
// same loading code then serves real models such as all-MiniLM-L6-v2.
package semantictest
