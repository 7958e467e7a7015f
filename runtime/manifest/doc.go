// Package manifest defines the recorded shape of one backend: what kiln-gen
// record writes to manifests/<backend>.json and what kiln-gen emit and the
// gateway read back. It is the one data format shared by gen/ and runtime/,
// so its encoding is canonical: sorted keys and lists, two-space indent, a
// trailing newline and no timestamps, so that a backend that did not change
// yields the same bytes and one that did yields a small reviewable diff.
package manifest
