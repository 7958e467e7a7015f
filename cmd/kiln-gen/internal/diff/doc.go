// Package diff compares two recordings of a backend (the committed manifest
// and a freshly recorded one) and says what changed for the callers of its
// tools. `kiln-gen diff` prints the result and exits non-zero on drift. The
// package does no I/O of its own beyond writing to the io.Writer handed to
// Render. It is internal to kiln-gen, so the gateway cannot import it: at
// run time runtime/catalog reports drift as tools added, removed and
// changed, and `kiln-gen diff` judges it.
//
// Every change carries a Severity judged from the caller's side. Input
// schemas are read as contracts on what callers send, so tightening them
// breaks callers and loosening them does not; output schemas are read as
// contracts on what callers receive, so the judgement is reversed where a
// reader could notice (a field disappearing, or a type widening past what a
// generated Go stub decodes). Schema constructs the package does not model
// (anyOf, oneOf, allOf, unresolvable $ref, patternProperties, ...) are
// compared as canonical JSON and reported as Unanalysed, assumed Breaking:
// a reviewer is better served by an honest "not analysed" than by a guess.
//
// Results are sorted on every field, so the output depends only on the
// manifests, not on list order or map iteration.
package diff
