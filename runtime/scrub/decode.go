package scrub

import (
	"slices"
	"unicode/utf8"
)

// A secret can reach the scrubber encoded so that its shape no longer
// matches: URL-encoded (ghp%5F…), split by invisible characters (U+200B
// inside the token), HTML-escaped (ghp&#95;…) or backslash-escaped
// (ghp\u005f…). The scan notes where such an encoding occurs; the text
// around each one (a window) is then decoded, the decoded text is scanned,
// and every find is mapped back to the original bytes, so the whole
// original span, invisible characters and escapes included, is replaced.
//
// Only windows are decoded, never the whole text: a result with one
// URL-encoded link pays for rescanning that link, and text with no
// encoding at all pays one table lookup per byte inside the scan it
// already does.

// maxDecodeDepth bounds decoding of decoded text (%255F is %5F once
// decoded, _ twice).
const maxDecodeDepth = 2

// Window bounds: a window spans the whole non-space run around an
// encoding (a token, a URL, a URL-encoded key) up to windowRun bytes each
// way, plus up to windowContext bytes of its line on each side, so the name
// of a NAME: value assignment is in the window with its encoded value.
const (
	windowRun     = 16 << 10
	windowContext = 96
	windowGap     = 8
)

// encodedAt reports whether an encoding starts at s[i], whose byte carries
// the fEnc flag.
func encodedAt(s string, i int) bool {
	switch c := s[i]; c {
	case '%':
		return i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])
	case '&':
		_, n := entityAt(s, i)
		return n > 0
	case '\\':
		_, n := backslashAt(s, i)
		return n > 0
	default:
		return invisibleAt(s, i) > 0
	}
}

// invisibleAt returns the length of the invisible format character at
// s[i] (zero-width spaces and joiners, word joiner, BOM, soft hyphen,
// bidirectional controls), or 0. They render as nothing, so inserting them
// into a token hides it from a matcher but not from a reader.
func invisibleAt(s string, i int) int {
	if s[i] < utf8.RuneSelf {
		return 0
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == 0x00AD, r == 0x061C, r == 0x180E, r == 0xFEFF,
		0x200B <= r && r <= 0x200F, 0x202A <= r && r <= 0x202E, 0x2060 <= r && r <= 0x206F:
		return n
	}
	return 0
}

// entities are the named HTML entities decoded: those of the characters
// tokens and assignments are made of.
var entities = map[string]byte{
	"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "lowbar": '_', "UnderBar": '_',
	"plus": '+', "sol": '/', "equals": '=', "colon": ':', "period": '.', "comma": ',', "hyphen": '-',
	"dash": '-', "num": '#', "percnt": '%', "excl": '!', "commat": '@', "dollar": '$', "ast": '*',
	"NewLine": '\n', "Tab": '\t',
}

// entityAt decodes the HTML entity at s[i] ('&'): &name;, &#NN; or &#xHH;
// for an ASCII character. n is its length, 0 if there is none.
func entityAt(s string, i int) (c byte, n int) {
	j := i + 1
	if j < len(s) && s[j] == '#' {
		j++
		base := 10
		if j < len(s) && (s[j] == 'x' || s[j] == 'X') {
			base = 16
			j++
		}
		v, k := 0, j
		for k < len(s) && k-j < 6 && (base == 16 && isHex(s[k]) || isDigit(s[k])) {
			v = v*base + hexVal(s[k])
			k++
		}
		if k == j || k >= len(s) || s[k] != ';' || v >= utf8.RuneSelf || v == 0 {
			return 0, 0
		}
		return byte(v), k + 1 - i
	}
	k := j
	for k < len(s) && k-j < 9 && isLetter(s[k]) {
		k++
	}
	if k >= len(s) || s[k] != ';' {
		return 0, 0
	}
	c, ok := entities[s[j:k]]
	if !ok {
		return 0, 0
	}
	return c, k + 1 - i
}

// backslashAt decodes \uXXXX and \xHH for an ASCII character at s[i]
// ('\\'), the forms JSON, JavaScript and Python write. Longer runs of
// backslashes (text escaped twice) decode to the one before the u.
func backslashAt(s string, i int) (c byte, n int) {
	j := i + 1
	for j < len(s) && j-i < 8 && s[j] == '\\' {
		j++
	}
	if j >= len(s) {
		return 0, 0
	}
	digits := 0
	switch s[j] {
	case 'u':
		digits = 4
	case 'x':
		digits = 2
	default:
		return 0, 0
	}
	if j+1+digits > len(s) {
		return 0, 0
	}
	v := 0
	for k := j + 1; k < j+1+digits; k++ {
		if !isHex(s[k]) {
			return 0, 0
		}
		v = v<<4 | hexVal(s[k])
	}
	if v >= utf8.RuneSelf || v < 0x20 && v != '\n' && v != '\t' && v != '\r' {
		return 0, 0
	}
	return byte(v), j + 1 + digits - i
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }

func hexVal(c byte) int {
	if isDigit(c) {
		return int(c - '0')
	}
	return int(c|0x20-'a') + 10
}

// decoded is a window's text with encodings undone; src[k] and srcEnd[k]
// bound the bytes of the window that decoded byte k came from.
type decoded struct {
	text        string
	src, srcEnd []int32
}

// decodeWindow undoes every encoding in w. It reports false when there was
// none after all (a lone '%' before two letters that are not hex stays).
func decodeWindow(w string) (decoded, bool) {
	out := make([]byte, 0, len(w))
	src := make([]int32, 0, len(w))
	srcEnd := make([]int32, 0, len(w))
	changed := false
	for i := 0; i < len(w); {
		c, n := w[i], 1
		switch {
		case c == '%' && i+2 < len(w) && isHex(w[i+1]) && isHex(w[i+2]):
			c, n = byte(hexVal(w[i+1])<<4|hexVal(w[i+2])), 3
		case c == '&':
			if d, k := entityAt(w, i); k > 0 {
				c, n = d, k
			}
		case c == '\\':
			if d, k := backslashAt(w, i); k > 0 {
				c, n = d, k
			}
		}
		if c == '\\' && n > 1 {
			// A decoded backslash would read as the start of an escape
			// (corp%5Cuser in a proxy URL), ending a token early.
			c, n = w[i], 1
		}
		if n == 1 && c >= utf8.RuneSelf {
			if k := invisibleAt(w, i); k > 0 {
				i += k
				changed = true
				continue
			}
		}
		changed = changed || n > 1
		out = append(out, c)
		src = append(src, int32(i))
		srcEnd = append(srcEnd, int32(i+n))
		i += n
	}
	return decoded{string(out), src, srcEnd}, changed
}

// window returns the bounds of the text decoded around the encoding at
// s[i]: the non-space run holding it and some context of its line.
func window(s string, i int) (a, b int) {
	a, b = i, i
	for a > 0 && i-a < windowRun && !windowStop(s[a-1]) {
		a--
	}
	for b < len(s) && b-i < windowRun && !windowStop(s[b]) {
		b++
	}
	ctxA := a
	for ctxA > 0 && a-ctxA < windowContext && s[ctxA-1] != '\n' {
		ctxA--
	}
	if ctxA > 0 && s[ctxA-1] != '\n' {
		for ctxA < a && s[ctxA-1] != ' ' {
			ctxA++ // cut by the bound: start at a word
		}
	}
	ctxB := b
	for ctxB < len(s) && ctxB-b < windowContext && s[ctxB] != '\n' {
		ctxB++
	}
	if ctxB < len(s) && s[ctxB] != '\n' {
		for ctxB > b && s[ctxB] != ' ' {
			ctxB--
		}
	}
	return ctxA, ctxB
}

// windowStop ends the run of a window: white space and the quotes and
// brackets that delimit a token in text, JSON and markup.
func windowStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// scanEncoded scans the windows around the encodings found at dirty (sorted)
// and appends what they hold, mapped back to s, to spans. pemOpen reports a
// private key left open by a window that reaches the end of s.
func (sc *Scrubber) scanEncoded(s string, dirty []int, spans []span, depth int) (_ []span, pemOpen bool) {
	type win struct{ a, b int }
	var wins []win
	for _, i := range dirty {
		if n := len(wins); n > 0 && i < wins[n-1].b {
			continue // inside the last window: "%41%41…" would walk it again at each '%'
		}
		a, b := window(s, i)
		// Windows a line break apart merge: a key split by invisible
		// characters on every line must decode as one block.
		if n := len(wins); n > 0 && a <= wins[n-1].b+windowGap {
			wins[n-1].b = max(wins[n-1].b, b)
			continue
		}
		wins = append(wins, win{a, b})
	}
	for _, w := range wins {
		d, ok := decodeWindow(s[w.a:w.b])
		if !ok {
			continue
		}
		found, open := sc.scanDepth(d.text, nil, depth+1)
		for _, sp := range found {
			spans = append(spans, span{w.a + int(d.src[sp.start]), w.a + int(d.srcEnd[sp.end-1]), sp.k})
		}
		pemOpen = pemOpen || open && w.b == len(s)
	}
	return spans, pemOpen
}

// sortedUnique sorts dirty positions; the scan records them in order
// already except across a resumed detector.
func sortedUnique(d []int) []int {
	slices.Sort(d)
	return slices.Compact(d)
}
