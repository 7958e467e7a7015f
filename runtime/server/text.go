package server

import (
	"strings"
	"unicode"

	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/textcut"
)

// FirstSentence returns the first sentence of s with white space folded,
// cut to at most max bytes on a rune boundary (never inside a UTF-8
// sequence) with "…" when cut.
func FirstSentence(s string, max int) string {
	return cut(strings.Join(strings.Fields(registry.FirstSentence(s)), " "), max)
}

// maxQuoted bounds, in bytes, how much of a client's argument an answer or
// an error quotes back: enough to recognise it, never a flood.
const maxQuoted = 80

// cut shortens s to at most max bytes on a rune boundary, with "…" when
// cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.TrimRightFunc(textcut.Prefix(s, max), unicode.IsSpace) + "…"
}
