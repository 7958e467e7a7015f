package textcut

import (
	"unicode"
	"unicode/utf8"
)

// maxBackoff bounds how far a cut moves to find a grapheme boundary. A
// longer cluster (hundreds of stacked combining marks) is a pathology, and
// cutting it at a rune boundary beats scanning it all.
const maxBackoff = 128

const (
	zwj  = '\u200d'
	zwnj = '\u200c'
)

// Before returns the largest index ≤ n at which s can be cut without
// splitting a grapheme cluster, falling back to a rune boundary.
func Before(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	for i := n; i >= 0 && n-i < maxBackoff; i-- {
		if IsBoundary(s, i) {
			return i
		}
	}
	i := n
	for i > 0 && n-i < utf8.UTFMax-1 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// After returns the smallest index ≥ n at which s can be cut without
// splitting a grapheme cluster, falling back to a rune boundary.
func After(s string, n int) int {
	if n <= 0 {
		return 0
	}
	if n >= len(s) {
		return len(s)
	}
	for i := n; i <= len(s) && i-n < maxBackoff; i++ {
		if IsBoundary(s, i) {
			return i
		}
	}
	i := n
	for i < len(s) && i-n < utf8.UTFMax-1 && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// IsBoundary reports whether s can be cut at i. It approximates the
// extended grapheme cluster rules of UAX #29 without their tables: it
// never splits CRLF, a rune from a following combining mark, joiner,
// variation selector, emoji modifier or tag, a ZWJ from what follows it, or a regional-indicator flag pair. Hangul and Indic
// conjunct rules are not modelled; a cut there still lands on a rune.
func IsBoundary(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	c, p := s[i], s[i-1]
	if c < utf8.RuneSelf && p < utf8.RuneSelf {
		return !(p == '\r' && c == '\n')
	}
	if !utf8.RuneStart(c) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	q, _ := utf8.DecodeLastRuneInString(s[:i])
	switch {
	case q == zwj, extends(r):
		return false
	case isRegional(q) && isRegional(r):
		n := 0
		for j := i; j > 0 && n < maxBackoff; n++ {
			x, size := utf8.DecodeLastRuneInString(s[:j])
			if !isRegional(x) {
				break
			}
			j -= size
		}
		return n%2 == 0
	}
	return true
}

// extends reports whether r attaches to the rune before it.
func extends(r rune) bool {
	if r < 0x300 {
		return false
	}
	switch {
	case r == zwj, r == zwnj,
		r >= 0x1160 && r <= 0x11ff, // Hangul medial vowels and final consonants
		r >= 0xd7b0 && r <= 0xd7ff,
		r >= 0x1f3fb && r <= 0x1f3ff, // emoji skin-tone modifiers
		r >= 0xe0020 && r <= 0xe007f: // emoji tag sequences
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegional(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }
