package scrub

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// prose reports whether v, an unquoted value after a name that says
// "secret", is words rather than a credential: two words or more, each
// one a word of letters (hyphens, underscores and apostrophes between
// them, an initial capital or all capitals) or a number, wrapped in
// sentence punctuation. A credential has no spaces, or at least one part
// that mixes letters with digits or symbols ("hunter2 horse"), so it
// fails. A passphrase of plain words written unquoted after a colon
// passes as prose: the price of not shredding every sentence that
// mentions a password.
func prose(v string) bool {
	words := 0
	for _, w := range strings.Fields(v) {
		if !proseWord(w) {
			return false
		}
		words++
	}
	return words >= 2
}

// proseWord reports whether w is a word or number of a sentence.
func proseWord(w string) bool {
	w = strings.TrimLeft(w, "\"'([{¿¡«“‘")
	w = strings.TrimRight(w, "\"'.,;:!?)]}…»”’")
	if w == "" || w == "-" || w == "—" || w == "–" {
		return true
	}
	if number(w) {
		return true
	}
	var upper, lower, innerUpper int
	prevLetter := false
	for i, r := range w {
		switch {
		case unicode.IsUpper(r):
			upper++
			if i > 0 && prevLetter {
				innerUpper++
			}
			prevLetter = true
		case unicode.IsLetter(r):
			lower++
			prevLetter = true
		case r == '-' || r == '_' || r == '\'' || r == '’' || r == '/':
			// Joins two letters: well-known, next_cursor, don't, and/or.
			if !prevLetter || i+utf8.RuneLen(r) >= len(w) {
				return false
			}
			prevLetter = false
		default:
			return false
		}
	}
	// "Word", "word", "WORD" and "Well-Known" are words; "wOrD", "MIIEow"
	// and "eyJhbG" are not.
	return innerUpper == 0 || lower == 0
}

// number reports whether w is a number as sentences write it: 12, 3.5,
// 12,000, 50%, with a short unit or ordinal (3pm, 10ms, 2nd) or a version
// letter (v2). A digit after letters ("hunter2") is no number.
func number(w string) bool {
	w = strings.TrimPrefix(w, "v")
	digits, i := 0, 0
	for ; i < len(w); i++ {
		c := w[i]
		if isDigit(c) {
			digits++
			continue
		}
		if c == '.' || c == ',' || c == ':' {
			continue
		}
		break
	}
	rest := w[i:]
	if rest == "%" {
		return digits > 0
	}
	if len(rest) > 3 {
		return false
	}
	for j := 0; j < len(rest); j++ {
		if rest[j] < 'a' || rest[j] > 'z' {
			return false
		}
	}
	return digits > 0
}
