package scrub

import "strings"

// A private key is often seen cut: a stderr tail keeps the last lines of a
// key a backend printed (the body and END, no BEGIN), a truncated result
// keeps its first lines. pemBlock handles a BEGIN line (with or without its
// END); the functions here find key body lines by their shape so a block
// cut at its start is redacted from the END line back, and a run of body
// lines with no marker at all (a tail that starts and ends mid-key) is
// redacted too.
//
// Lines are separated by a real line break, by an escaped one (\n, \\n in
// JSON-encoded text such as a log line) or by the quotes and commas of a
// list of lines (kiln://backend/NAME renders the tail as a JSON array), each
// with any indentation, so the same rules hold in every form a tail takes.

// pemScanBack bounds how far back from an END line body lines are looked
// for: an RSA 4096 key is about 3.2 KB of base64, a PGP key block more.
const pemScanBack = 16 << 10

// b64Std is the PEM body alphabet.
var b64Std = class("A-Za-z0-9+/=")

// pemLabel reports whether the marker at s[i:] ("-----BEGIN " or "-----END
// " already matched, n bytes long) names a private key, and returns the end
// of its closing "-----".
func pemLabel(s string, i, n int) (end int, private bool) {
	labelStart := i + n
	l := strings.Index(s[labelStart:min(len(s), labelStart+64)], "-----")
	if l < 0 {
		return 0, false
	}
	label := s[labelStart : labelStart+l]
	return labelStart + l + 5, strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK")
}

// pemEnd matches a private key END line at s[i] whose BEGIN line is not in
// s and redacts it together with the body lines before it. floor is where
// the walk back must stop (the end of an earlier redaction).
func pemEnd(s string, i, floor int) (span, bool) {
	const marker = "-----END "
	if !strings.HasPrefix(s[i:], marker) {
		return span{}, false
	}
	end, private := pemLabel(s, i, len(marker))
	if !private {
		return span{}, false
	}
	floor = max(floor, i-pemScanBack)
	// The last body line may share the END line ("…AQAB-----END" once the
	// line breaks were lost) or end just before it; it may be short.
	p := i
	for p > floor && (s[p-1] == ' ' || s[p-1] == '\t') {
		p--
	}
	if q, ok := lineSepBack(s, p, floor); ok {
		p = q
	}
	start := lineStartBack(s, p, floor)
	if start == p || !keyWord(s[start:p]) {
		return span{}, false // an END line alone shows nothing secret
	}
	if !wholeLine(s, start, floor) {
		// Lines joined by spaces, as an unquoted shell $KEY prints them.
		if sp, ok := spacedBody(s, start, p, floor); ok {
			return span{sp, end, kindPrivateKey}, true
		}
		return span{}, false
	}
	for {
		q, ok := lineSepBack(s, start, floor)
		if !ok {
			break
		}
		ls := lineStartBack(s, q, floor)
		if ls == q || !bodyLine(s[ls:q]) || !wholeLine(s, ls, floor) {
			break
		}
		start = ls
	}
	return span{start, end, kindPrivateKey}, true
}

// spacedBody walks back from the base64 word s[start:p] before an END
// marker over words separated by spaces, each one a key body line, and
// returns where the first starts. At least one of them must be a body line,
// so "ends with -----END PRIVATE KEY-----" in prose is no key.
func spacedBody(s string, start, p, floor int) (int, bool) {
	found := bodyLine(s[start:p])
	for {
		q := start
		for q > floor && start-q < 8 && (s[q-1] == ' ' || s[q-1] == '\t') {
			q--
		}
		if q == start {
			break
		}
		ls := lineStartBack(s, q, floor)
		if ls == q || !bodyLine(s[ls:q]) || ls > floor && !windowStop(s[ls-1]) {
			break
		}
		start, found = ls, true
	}
	return start, found
}

// wholeLine reports whether the base64 run at s[ls] starts a line: it
// follows a line break or the start of the text, not other text.
func wholeLine(s string, ls, floor int) bool {
	q, broke := lineSepBack(s, ls, floor)
	for !broke && q > floor && s[q-1] == '[' {
		q--
	}
	return broke || q == floor
}

// lineStartBack returns where the base64 line ending at s[p] starts. The
// letter of an escape such as \n is not part of the line.
func lineStartBack(s string, p, floor int) int {
	ls := p
	for ls > floor && p-ls < 256 && b64Std[s[ls-1]] {
		ls--
	}
	if ls < p && ls > floor && s[ls-1] == '\\' && (s[ls] == 'n' || s[ls] == 'r' || s[ls] == 't') {
		ls++
	}
	return ls
}

// lineSepBack reports whether the bytes before s[p] separate two lines and
// returns where the separator starts: spaces, quotes and commas around at
// least one line break or comma, real or escaped.
func lineSepBack(s string, p, floor int) (int, bool) {
	q, broke := p, false
	for q > floor && p-q < 64 {
		switch c := s[q-1]; c {
		case ' ', '\t', '"', '\'':
			q--
			continue
		case '\n', '\r', ',':
			broke = true
			q--
			continue
		case 'n', 'r', 't':
			if q-2 >= floor && s[q-2] == '\\' {
				q -= 2
				for q > floor && s[q-1] == '\\' {
					q--
				}
				broke = broke || c != 't'
				continue
			}
		}
		break
	}
	return q, broke
}

// bodyLine reports whether line looks like a line of a key body: base64
// of 16 bytes or more with the mix of cases and digits random bytes always
// have. Full lines are 64 (PEM) or 70 (OpenSSH) bytes; the first line of a
// tail cut mid-line is shorter.
func bodyLine(line string) bool {
	if len(line) < 16 {
		return false
	}
	var u, l, d bool
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case 'A' <= c && c <= 'Z':
			u = true
		case 'a' <= c && c <= 'z':
			l = true
		case '0' <= c && c <= '9', c == '+', c == '/':
			d = true
		case c == '=':
			if i < len(line)-2 {
				return false
			}
		}
	}
	return u && l && d
}

// minBodyRun is how many full body lines in a row, with no marker, make a
// key: two 64-byte lines of random base64 in a row are already rare outside
// PEM, and three leave ordinary base64 (data URIs are one line, MIME wraps
// at 76) alone.
const minBodyRun = 3

// bodyRun redacts a run of at least minBodyRun full key body lines starting
// at the line break s[i] (real, or the backslash of an escaped one), where
// the line before is not the BEGIN line of something public (a certificate
// body has the same shape). It returns the end of the run it examined, so
// the line breaks inside it are not examined again.
func bodyRun(s string, i int) (sp span, seen int, ok bool) {
	p := i
	for p < len(s) && p-i < 64 {
		switch c := s[p]; {
		case c == ' ', c == '\t', c == '"', c == '\'', c == ',', c == '\n', c == '\r':
			p++
			continue
		case c == '\\' && p+1 < len(s) && (s[p+1] == 'n' || s[p+1] == 'r' || s[p+1] == 't' || s[p+1] == '\\'):
			p += 2
			continue
		}
		break
	}
	start, n := p, 0
	lineEnd := p
	for {
		e := p
		for e < len(s) && e-p <= 76 && b64Std[s[e]] {
			e++
		}
		if w := e - p; (w != 64 && w != 70) || !bodyLine(s[p:e]) {
			break
		}
		n++
		lineEnd = e
		q, broke := lineSepFwd(s, e)
		if !broke {
			break
		}
		p = q
	}
	if n < minBodyRun {
		return span{}, max(lineEnd, i+1), false
	}
	if publicBefore(s, i) || publicAfter(s, lineEnd) {
		return span{}, lineEnd, false
	}
	// A partial line before the run (a tail cut mid-line) and the shorter
	// last line of a body after it belong to the key too.
	if q, ok := lineSepBack(s, start, 0); ok {
		if ls := lineStartBack(s, q, 0); ls < q && bodyLine(s[ls:q]) && wholeLine(s, ls, 0) {
			start = ls
		}
	}
	if q, broke := lineSepFwd(s, lineEnd); broke {
		e := q
		for e < len(s) && e-q < 76 && b64Std[s[e]] {
			e++
		}
		if _, brk := lineSepFwd(s, e); bodyLine(s[q:e]) && (brk || e == len(s)) {
			lineEnd = e
		}
	}
	return span{start, lineEnd, kindPrivateKey}, lineEnd, true
}

// lineSepFwd is lineSepBack read forwards from s[p].
func lineSepFwd(s string, p int) (int, bool) {
	q, broke := p, false
	for q < len(s) && q-p < 64 {
		switch c := s[q]; {
		case c == ' ', c == '\t', c == '"', c == '\'':
			q++
			continue
		case c == '\n', c == '\r', c == ',':
			broke = true
			q++
			continue
		case c == '\\':
			r := q
			for r < len(s) && s[r] == '\\' {
				r++
			}
			if r < len(s) && (s[r] == 'n' || s[r] == 'r' || s[r] == 't') {
				broke = broke || s[r] != 't'
				q = r + 1
				continue
			}
		}
		break
	}
	return q, broke
}

// publicBefore reports whether the line ending at the line break s[i] is
// the BEGIN line of a certificate, public key or other non-secret block.
func publicBefore(s string, i int) bool {
	lo := max(0, i-80)
	b := strings.LastIndex(s[lo:i], "-----BEGIN ")
	if b < 0 {
		return false
	}
	_, private := pemLabel(s, lo+b, len("-----BEGIN "))
	return !private
}

// publicAfter reports whether the lines after a body run ending at s[e],
// past at most one more base64 line (a body's short last one), end with
// the END line of a certificate or other non-secret block.
func publicAfter(s string, e int) bool {
	for range 2 {
		q, broke := lineSepFwd(s, e)
		if !broke {
			return false
		}
		if strings.HasPrefix(s[q:], "-----END ") {
			_, private := pemLabel(s, q, len("-----END "))
			return !private
		}
		e = q
		for e < len(s) && e-q < 76 && b64Std[s[e]] {
			e++
		}
	}
	return false
}

// keyFollows reports whether what follows a BEGIN marker ending at s[i]
// can be a key: nothing (a cut text), a header line ("Proc-Type: …",
// "Version: …") or a base64 word that is not a word of prose. Text that
// names the marker ("starts with -----BEGIN PRIVATE KEY----- and ends
// with…", a test's expected string) is not a key.
func keyFollows(s string, i int) bool {
	q, _ := lineSepFwd(s, i)
	e := q
	for e < len(s) && e-q < 64 && !windowStop(s[e]) && s[e] != ',' && s[e] != '\\' {
		e++
	}
	w := s[q:e]
	switch {
	case w == "":
		return q == len(s)
	case strings.HasSuffix(w, ":"):
		return true
	case !b64Std[w[0]]:
		return false
	}
	return keyWord(w)
}

// keyWord reports whether the base64 word w next to a marker can be key
// material rather than a word of prose: long, or not a lower-case or
// capitalised word ("MIIE…" starts most keys, "AQAB" and "Zw==" end many).
func keyWord(w string) bool {
	return len(w) >= 16 || !proseWord(w) || strings.ToUpper(w) == w
}
