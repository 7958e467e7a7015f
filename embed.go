// Package kiln holds the files compiled into the kiln binary from the
// repository root: the default config, so a built binary serves its
// compiled-in backends without any file beside it.
package kiln

import _ "embed"

// DefaultConfig is kiln.default.yaml: the backends of the repository's
// kiln.yaml, started with npx at their pinned versions rather than from
// tests/node_modules, so a release binary works from any folder.
//
//go:embed kiln.default.yaml
var DefaultConfig []byte
