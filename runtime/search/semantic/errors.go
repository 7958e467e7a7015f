package semantic

import "errors"

// ErrModelMismatch reports a model file whose sha256 is not the one the
// configuration or the frozen vectors expect.
var ErrModelMismatch = errors.New("semantic model mismatch")

// ErrFormat reports frozen vectors that cannot be decoded.
var ErrFormat = errors.New("malformed semantic vectors")

// ErrUnavailable reports a binary built without the semantic tag: it has no
// embedding runtime, so semantic search is off and search stays lexical.
var ErrUnavailable = errors.New("semantic search is not built in: rebuild with make build SEMANTIC=1 after make llama, or remove the semantic model from the configuration")

// ErrClosed reports an Embed call after Close.
var ErrClosed = errors.New("embedder is closed")

// ErrStale reports frozen vectors that do not cover exactly the compiled
// tools: the search index and the vectors were not emitted together.
var ErrStale = errors.New("semantic vectors do not match the compiled tools")
