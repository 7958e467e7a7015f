package server

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/registry"
)

// FirstSentence returns the first sentence of s with white space folded,
// cut to at most max bytes on a rune boundary (never inside a UTF-8
// sequence) with "…" when cut.
func FirstSentence(s string, max int) string {
	s = strings.Join(strings.Fields(registry.FirstSentence(s)), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}
