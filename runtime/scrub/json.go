package scrub

import (
	"encoding/json"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// JSON scrubs every string value inside the JSON document raw and returns
// valid JSON whenever raw was valid. Object keys are left alone; a value
// whose key names a secret ("password", "apiKey", "Authorization") is
// redacted by the same rules as NAME=value text. Bytes outside changed
// strings are kept exactly, so numbers, key order and formatting survive.
// When nothing is redacted raw itself is returned. A document that is not
// JSON is scrubbed as text.
func (sc *Scrubber) JSON(raw json.RawMessage) json.RawMessage {
	out, _ := sc.json(raw, nil)
	return out
}

// JSONExcept is JSON that leaves the top-level members named keep as they
// are: a value the sender must get back byte for byte (a requestState the
// backend verifies) is not text for a person to read.
func (sc *Scrubber) JSONExcept(raw json.RawMessage, keep ...string) json.RawMessage {
	out, _ := sc.json(raw, func(path []string, key string) bool {
		if len(path) != 1 { // the document's own members
			return false
		}
		for _, k := range keep {
			if key == k {
				return true
			}
		}
		return false
	})
	return out
}

// skipFunc reports whether the string value under key, inside containers
// reached through the keys in path, must be left untouched.
type skipFunc func(path []string, key string) bool

// json is JSON with a skip rule; changed reports whether out differs.
func (sc *Scrubber) json(raw json.RawMessage, skip skipFunc) (out json.RawMessage, changed bool) {
	if sc == nil || len(raw) == 0 {
		return raw, false
	}
	w := jsonWalker{sc: sc, doc: string(raw), skip: skip}
	ok := w.run()
	if ok && w.keyLines {
		// A key may be split over the strings of an array, one line each
		// (a stderr tail as a list): find it in the document's text and
		// walk again, redacting every string it touches.
		if keys := keySpans(sc, w.doc); len(keys) > 0 {
			w = jsonWalker{sc: sc, doc: w.doc, skip: skip, force: keys}
			ok = w.run()
		}
	}
	if !ok {
		spans, _ := sc.scan(w.doc, nil)
		if len(spans) == 0 {
			return raw, false
		}
		sc.count(spans)
		return json.RawMessage(sc.apply(w.doc, spans)), true
	}
	if w.out == nil {
		return raw, false
	}
	for _, k := range w.kinds {
		sc.total(k).Add(1) // only now: a walk that fails halfway is redone as text
	}
	return append(w.out, w.doc[w.copied:]...), true
}

// jsonWalker finds the strings of a JSON document without decoding the
// rest: the scrubber only needs string values and the key each belongs to.
// It rejects anything outside strings that JSON does not allow there, so
// text that merely contains quotes is scrubbed as text instead, where no
// byte goes unscanned.
type jsonWalker struct {
	sc   *Scrubber
	doc  string
	skip skipFunc

	// force holds private key spans of doc found across strings; a string
	// overlapping one is redacted whole. keyLines reports a string that
	// looks like a line of a key, which makes json look for such spans.
	force    []span
	keyLines bool

	out    []byte // nil until the first change
	copied int    // doc[:copied] is in out
	kinds  []kind // redactions to count once the walk succeeds
	spans  []span // scratch

	path   []string // keys of the open containers ("" in arrays)
	key    string   // the last key, until its value starts
	keyEnd int      // index just past the key's ':'
	hasKey bool
}

// gapByte is what may appear between strings in JSON, apart from the
// literals true, false and null.
var gapByte = class(" \t\r\n,:0-9+.eE-")

func (w *jsonWalker) run() bool {
	doc := w.doc
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			close, ok := jsontext.StringEnd(doc, i)
			if !ok {
				return false
			}
			end := close - 1 // the closing quote
			esc := strings.IndexByte(doc[i+1:end], '\\') >= 0
			m := end + 1
			for m < len(doc) && (doc[m] == ' ' || doc[m] == '\t' || doc[m] == '\n' || doc[m] == '\r') {
				m++
			}
			if m < len(doc) && doc[m] == ':' {
				key := doc[i+1 : end]
				if esc {
					if key, ok = jsontext.Unescape(key); !ok {
						return false
					}
				}
				w.key, w.keyEnd, w.hasKey = key, m+1, true
				i = m + 1
				continue
			}
			if !w.value(i, end, esc, w.takeKey(i)) {
				return false
			}
			i = end + 1
		case c == '{' || c == '[':
			w.path = append(w.path, w.takeKey(i))
			i++
		case c == '}' || c == ']':
			if len(w.path) == 0 {
				return false
			}
			w.path = w.path[:len(w.path)-1]
			i++
		case gapByte[c]:
			i++
		case strings.HasPrefix(doc[i:], "true"), strings.HasPrefix(doc[i:], "null"):
			i += 4
		case strings.HasPrefix(doc[i:], "false"):
			i += 5
		default:
			return false
		}
	}
	return len(w.path) == 0
}

// takeKey returns the key whose value starts at i, or "" when the value is
// an array element or a top-level document.
func (w *jsonWalker) takeKey(i int) string {
	if !w.hasKey {
		return ""
	}
	w.hasKey = false
	if strings.TrimLeft(w.doc[w.keyEnd:i], " \t\r\n") != "" {
		return ""
	}
	return w.key
}

// value scrubs the string doc[start:end+1], quotes included.
func (w *jsonWalker) value(start, end int, esc bool, key string) bool {
	if w.skip != nil && w.skip(w.path, key) {
		return true
	}
	s := w.doc[start+1 : end]
	if esc {
		var ok bool
		if s, ok = jsontext.Unescape(s); !ok {
			return false
		}
	}
	// The shortest text any detector matches is a five-byte assignment
	// such as "a=xyz"; many values in API responses are shorter ("open",
	// "bug", "User"), and skipping them skips the scan's setup.
	spans := w.spans[:0]
	if len(s) >= 5 {
		spans, _ = w.sc.scan(s, spans)
	}
	if key != "" {
		if c, aws := classifyName(key); c != notSecret {
			if rs, re, k, ok := valueSpan(s, c, aws, true); ok {
				spans = merge(append(spans, span{rs, re, k}))
			} else if d, enc := decodeWindow(s); enc {
				// An encoded value ("Zq81%2DKd…") is judged decoded.
				if rs, re, k, ok := valueSpan(d.text, c, aws, true); ok {
					spans = merge(append(spans, span{int(d.src[rs]), int(d.srcEnd[re-1]), k}))
				}
			}
		}
	}
	if !w.keyLines && len(s) >= 16 {
		t := strings.TrimSpace(s)
		w.keyLines = len(t) <= 256 && looksKeyLine(t) || strings.Contains(s, "-----")
	}
	for _, f := range w.force {
		if f.start <= end && start < f.end && keyPart(s) {
			spans = append(spans[:0], span{0, len(s), kindPrivateKey})
			break
		}
	}
	w.spans = spans
	if len(spans) == 0 {
		return true
	}
	if w.out == nil {
		w.out = make([]byte, 0, len(w.doc)+64)
	}
	for _, sp := range spans {
		w.kinds = append(w.kinds, sp.k)
	}
	w.out = append(w.out, w.doc[w.copied:start]...)
	// Bytes outside what was redacted, valid UTF-8 or not, go back as
	// they came.
	w.out = jsontext.AppendString(w.out, w.sc.apply(s, spans), 0)
	w.copied = end + 1
	return true
}

// keySpans returns the private key redactions the text scan finds in doc
// that cross from one JSON string into another.
func keySpans(sc *Scrubber, doc string) []span {
	spans, _ := sc.scan(doc, nil)
	out := spans[:0]
	for _, sp := range spans {
		if sp.k == kindPrivateKey && strings.Contains(doc[sp.start:sp.end], `"`) {
			out = append(out, sp)
		}
	}
	return out
}

// keyPart reports whether s, a string inside a key found across strings,
// is part of the key: a marker, a body line or a short last line. A key
// cut at its end runs to the end of the document, over strings such as a
// content block's "type" that must survive.
func keyPart(s string) bool {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "PRIVATE KEY") || looksKeyLine(t) {
		return true
	}
	for i := 0; i < len(t); i++ {
		if !b64Std[t[i]] {
			return false
		}
	}
	return t != "" && keyWord(t)
}

// looksKeyLine is keyBodyLine made cheap for the common case: most strings
// fail at their first byte outside base64, and only one that may hide an
// encoding there is decoded.
func looksKeyLine(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; !b64Std[c] {
			if c == '%' || c == '&' || c == '\\' || c >= 0x80 {
				return keyBodyLine(t, false)
			}
			return false
		}
	}
	return bodyLine(t)
}
