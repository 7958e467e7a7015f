package server

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FirstSentence returns the first sentence of s, cut to at most max bytes
// on a rune boundary (never inside a UTF-8 sequence) with "…" when cut.
func FirstSentence(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := sentenceEnd(s); i > 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// sentenceEnd finds the end of the first sentence: a period, question or
// exclamation mark followed by white space, a CJK full stop, or a blank
// line. Abbreviations such as "e.g." are rare enough in tool descriptions
// that handling them is not worth the complexity.
func sentenceEnd(s string) int {
	for i, r := range s {
		switch r {
		case '.', '!', '?':
			next := i + 1
			if next >= len(s) || s[next] == ' ' || s[next] == '\n' || s[next] == '\t' {
				return next
			}
		case '。', '！', '？':
			return i + utf8.RuneLen(r)
		case '\n':
			if strings.HasPrefix(s[i:], "\n\n") {
				return i
			}
		}
	}
	return 0
}
