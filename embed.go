// Package kiln holds the files compiled into the kiln binary from the
// repository root: the default config, so a built binary serves its
// compiled-in backends without any file beside it.
package kiln

import _ "embed"

// DefaultConfig is the repository's kiln.yaml.
//
//go:embed kiln.yaml
var DefaultConfig []byte
