package scrub

import (
	"math/bits"
	"slices"
	"strings"
)

// kind is a redaction type. Kinds at or above numKinds are known values:
// numKinds+i is Scrubber.values[i].
type kind uint16

const (
	kindAssignment kind = iota
	kindAWSSecret
	kindBearer
	kindBasicAuth
	kindSlackWebhook
	kindJWT
	kindAWSKey
	kindGitHub
	kindOpenAI
	kindAnthropic
	kindStripe
	kindSlack
	kindGoogle
	kindPrivateKey
	numKinds
)

var kindNames = [numKinds]string{
	kindAssignment:   "assignment",
	kindAWSSecret:    "aws-secret-key",
	kindBearer:       "bearer-token",
	kindBasicAuth:    "basic-auth",
	kindSlackWebhook: "slack-webhook",
	kindJWT:          "jwt",
	kindAWSKey:       "aws-access-key",
	kindGitHub:       "github-token",
	kindOpenAI:       "openai-key",
	kindAnthropic:    "anthropic-key",
	kindStripe:       "stripe-key",
	kindSlack:        "slack-token",
	kindGoogle:       "google-api-key",
	kindPrivateKey:   "private-key",
}

// priority decides the type of overlapping finds, which are merged into one
// redaction: the most specific evidence names it. A private key block
// outranks everything because it encloses whatever it overlaps; a known
// value outranks a shape because the config told us exactly what it is; a
// vendor prefix outranks the generic JWT, URL, bearer and NAME=value rules.
func priority(k kind) int {
	switch {
	case k == kindPrivateKey:
		return 100
	case k >= numKinds:
		return 90
	case k >= kindAWSKey:
		return 80
	case k == kindJWT:
		return 70
	case k == kindBasicAuth, k == kindSlackWebhook:
		return 60
	case k == kindBearer:
		return 50
	case k == kindAWSSecret:
		return 40
	}
	return 30
}

// span is one redaction: s[start:end] becomes the marker of k.
type span struct {
	start, end int
	k          kind
}

// Byte classes, as tables because the scan loop consults them per byte.
var (
	alnum       = class("A-Za-z0-9")
	upperAlnum  = class("A-Z0-9")
	alnumU      = class("A-Za-z0-9_")
	b64url      = class("A-Za-z0-9_-")
	slackBody   = class("A-Za-z0-9-")
	bearerBody  = class("A-Za-z0-9._~+/-")
	tokenish    = class("A-Za-z0-9._~+/=-")
	nameChars   = class("A-Za-z0-9_.-")
	schemeChar  = class("A-Za-z0-9+.-")
	webhookPath = class("A-Za-z0-9/")
)

// class builds a byte table from ranges like "A-Za-z0-9_-"; a '-' that ends
// the spec is literal.
func class(spec string) *[256]bool {
	var t [256]bool
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for c := spec[i]; c <= spec[i+2]; c++ {
				t[c] = true
			}
			i += 2
			continue
		}
		t[spec[i]] = true
	}
	return &t
}

// maxRun bounds every forward scan a detector makes from one anchor: a
// token run, a value, a URL authority. Without it, crafted input such as
// "sk-sk-sk-…" or "password=password=…" makes each anchor rescan the rest
// of the text, quadratic in its length. No real credential this package
// recognises by shape is longer; a longer run is cut at the bound.
const maxRun = 4096

// runEnd returns the first index at or after i whose byte is not in c, or
// i+maxRun.
func runEnd(s string, i int, c *[256]bool) int {
	end := min(len(s), i+maxRun)
	for i < end && c[s[i]] {
		i++
	}
	return i
}

// Byte flags for the scan loop. fWord marks letters that start a vendor
// prefix, which count only at a word start (after a non-alphanumeric);
// fPunct marks the anchors of PEM blocks, URLs and assignments; fValue
// marks, in a Scrubber's own copy of the table, the first bytes of
// Options.Values, so known values are found in the same pass. fEsc and
// fBackslash let a JSON escape such as \n count as a word break in
// JSON-encoded text (log lines, a document that failed to parse), where
// "…\nghp_…" must still match. The bit positions matter: triggerMask
// shifts them into place instead of branching.
const (
	fAlnum uint8 = 1 << iota
	fWord
	fPunct
	fValue
	fEsc
	fBackslash
	// fEnc marks bytes that may start an encoding (decode.go): '%', '&',
	// '\\' and the lead bytes of invisible characters.
	fEnc
)

var flags = func() (t [256]uint8) {
	for c := range 256 {
		if alnum[c] {
			t[c] |= fAlnum
		}
	}
	for _, c := range "AgsrexBb" {
		t[c] |= fWord
	}
	for _, c := range "-:=\n\\" {
		t[c] |= fPunct
	}
	for _, c := range []byte{'%', '&', '\\', 0xC2, 0xD8, 0xE1, 0xE2, 0xEF} {
		t[c] |= fEnc
	}
	for _, c := range "ntr" {
		t[c] |= fEsc
	}
	t['\\'] |= fBackslash
	return t
}()

// scan finds every secret in s and returns the redactions sorted and
// merged, appended to dst. pemOpen reports a private key block that had no
// END line before the end of s.
//
// It works in blocks of 64 bytes: a branch-free pass turns each block into
// a bitmask of trigger positions, then only the set bits are visited. On
// prose about a third of all bytes are trigger letters, nearly all inside
// words, and a branch per byte mispredicted often enough to double the
// cost of the whole scan.
func (sc *Scrubber) scan(s string, dst []span) (spans []span, pemOpen bool) {
	return sc.scanDepth(s, dst, 0)
}

// scanDepth is scan of text decoded depth times (see decode.go).
func (sc *Scrubber) scanDepth(s string, dst []span, depth int) (spans []span, pemOpen bool) {
	spans = dst
	m := memo{valueBudget: 4*len(s) + 64<<10}
	tbl := &flags
	if sc.flags != nil {
		tbl = sc.flags
	}
	// A key body run at the very start has no line break before it to
	// trigger on.
	if len(s) >= 64*minBodyRun && b64Std[s[0]] {
		if sp, seen, ok := bodyRun(s, 0); ok {
			spans = append(spans, sp)
			m.keyFloor = sp.start
			m.lineSeen = seen
		}
	}
	for i := 0; i < len(s); {
		end := min(i+64, len(s))
		var prev, prev2 uint8
		if i > 0 {
			prev = tbl[s[i-1]]
		}
		if i > 1 {
			prev2 = tbl[s[i-2]]
		}
		mask := triggerMask(s[i:end], prev, prev2, tbl)
		next := end
		for mask != 0 {
			pos := i + bits.TrailingZeros64(mask)
			mask &= mask - 1
			f := tbl[s[pos]]
			if f&fEnc != 0 && depth < maxDecodeDepth && encodedAt(s, pos) {
				m.dirty = append(m.dirty, pos)
			}
			if f&fValue != 0 {
				spans = sc.valueAt(s, pos, spans)
			}
			if f&(fWord|fPunct) == 0 {
				continue
			}
			var resume int
			var open bool
			spans, resume, open = detectAt(s, pos, spans, &m)
			pemOpen = pemOpen || open
			if resume > pos+1 {
				if resume >= end {
					next = resume
					break
				}
				mask &^= 1<<(uint(resume-i)&63) - 1
			}
		}
		i = next
	}
	spans = sc.findLearned(s, spans)
	if len(m.dirty) > 0 {
		var open bool
		spans, open = sc.scanEncoded(s, sortedUnique(m.dirty), spans, depth)
		pemOpen = pemOpen || open
	}
	return merge(spans), pemOpen
}

// triggerMask returns a bit per byte of b (at most 64 bytes) that is set
// where a detector must look; prev and prev2 hold the flags of the two
// bytes before b. It is kept out of line on purpose: inlined into scan,
// register pressure spilled the mask to the stack on every byte and halved
// throughput.
//
//go:noinline
func triggerMask(b string, prev, prev2 uint8, tbl *[256]uint8) uint64 {
	var mask uint64
	for j := 0; j < len(b); j++ {
		f := tbl[b[j]]
		// A letter after an alphanumeric is inside a word, unless that
		// alphanumeric is the letter of a \n, \t or \r escape.
		esc := prev >> 4 & (prev2 >> 5) & 1
		inWord := (prev & fAlnum) &^ esc
		fire := f & (fPunct | fValue | fEnc | fWord&^(inWord<<1))
		// fire is below 128; adding 127 and shifting by 7 makes it 0 or 1.
		mask |= uint64((fire+127)>>7) << (uint(j) & 63)
		prev2, prev = prev, f
	}
	return mask
}

// wordStart reports whether s[i] starts a word in the sense of
// triggerMask.
func wordStart(s string, i int) bool {
	if i == 0 || !alnum[s[i-1]] {
		return true
	}
	return i >= 2 && s[i-2] == '\\' && (s[i-1] == 'n' || s[i-1] == 't' || s[i-1] == 'r')
}

// memo is what one scan remembers to stay linear on crafted input.
type memo struct {
	// deadSK, deadJWT and deadSlack: a start of that shape before this
	// index is known to fail (see wordSecret).
	deadSK, deadJWT, deadSlack int
	// covered is the end of the last assignment value redacted; the '=' and
	// ':' inside it are part of the secret, not new assignments, and
	// "password=password=…" would otherwise rescan the value at each one.
	covered int
	// valueBudget is how many bytes assignment values may still scan at
	// full length (maxRun); past it they scan at most degradedRun. Legit
	// text spends a fraction of the budget (values are short), while
	// "api_key=api_key=…" spends maxRun per '='.
	valueBudget int
	// keyFloor is the end of the last private key redaction: an END line
	// after it looks for its body no further back. lineSeen is where the
	// last key body run examined from a line break ended.
	keyFloor, lineSeen int
	// dirty lists where encodings start, for scanEncoded.
	dirty []int
}

// degradedRun is the value scan limit once memo.valueBudget is spent.
const degradedRun = 64

// detectAt runs the detector for the trigger byte at s[i] and returns where
// scanning resumes: past a matched token, or at i+1 where a match may hold
// a better-named secret (an assignment's value, a bearer token).
func detectAt(s string, i int, spans []span, m *memo) (_ []span, resume int, pemOpen bool) {
	resume = i + 1
	switch s[i] {
	case '-':
		if i+11 > len(s) || s[i+1] != '-' {
			break
		}
		if end, ok, open := pemBlock(s, i); ok {
			spans = append(spans, span{i, end, kindPrivateKey})
			m.keyFloor = end
			return spans, end, open
		}
		if sp, ok := pemEnd(s, i, m.keyFloor); ok {
			m.keyFloor = sp.end
			return append(spans, sp), sp.end, false
		}
	case '\n', '\\':
		if i < m.lineSeen || s[i] == '\\' && (i+1 >= len(s) || s[i+1] != 'n') {
			break
		}
		sp, seen, ok := bodyRun(s, i)
		m.lineSeen = seen
		if ok {
			// An END line right after the run walks back over it again, so
			// the two finds merge into one redaction.
			m.keyFloor = sp.start
			return append(spans, sp), sp.end, false
		}
	case ':':
		if i+2 < len(s) && s[i+1] == '/' && s[i+2] == '/' {
			if sp, ok := urlSecret(s, i); ok {
				spans = append(spans, sp)
			}
			break
		}
		if i < m.covered {
			break
		}
		if sp, ok := colonAssignment(s, i, m); ok {
			spans = append(spans, sp)
			m.covered = sp.end
		}
	case '=':
		if i < m.covered {
			break
		}
		if sp, ok := equalsAssignment(s, i, m); ok {
			spans = append(spans, sp)
			m.covered = sp.end
		}
	default:
		if !wordStart(s, i) {
			break // the bit was set for a known value's first byte
		}
		if sp, ok := wordSecret(s, i, m); ok {
			spans = append(spans, sp)
			resume = sp.end
			if sp.k == kindBearer {
				resume = sp.start // the token may be a JWT or a vendor key that names it better
			}
		}
	}
	return spans, resume, false
}

// merge sorts spans and unions overlapping ones, so no part of any find
// survives; the union takes the type with the highest priority.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			if priority(sp.k) > priority(last.k) {
				last.k = sp.k
			}
			continue
		}
		out = append(out, sp)
	}
	return out
}

// valueAt appends a span if a known value starts at s[i].
//
// Every value is at least MinValueLen (8) bytes, so comparing the first
// eight as one word rejects a candidate in one step; a value's first byte
// can be as common as 's' in prose.
func (sc *Scrubber) valueAt(s string, i int, spans []span) []span {
	if len(s)-i < MinValueLen {
		return spans
	}
	head := load64(s[i:])
	for _, vi := range sc.byFirst[s[i]] {
		if sc.heads[vi] != head {
			continue
		}
		if v := sc.values[vi].Value; strings.HasPrefix(s[i:], v) {
			return append(spans, span{i, i + len(v), numKinds + kind(vi)})
		}
	}
	return spans
}

// load64 returns the first eight bytes of s as a little-endian word.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if isLetter(s[i]) {
			return true
		}
	}
	return false
}

// mixed reports whether s holds a digit, an upper-case and a lower-case
// letter: the signature of a random base62 string, absent from words.
func mixed(s string) bool {
	var d, u, l bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			d = true
		case 'A' <= c && c <= 'Z':
			u = true
		case 'a' <= c && c <= 'z':
			l = true
		}
	}
	return d && u && l
}
