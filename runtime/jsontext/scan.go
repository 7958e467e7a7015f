package jsontext

import (
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The functions below walk JSON that json.Valid has already accepted, so
// they only find value boundaries and never validate. They work on spans
// of the original text: no tree is built, nothing is decoded that is not
// needed, and kept values can reach an output byte for byte.

// ValueEnd returns the index just past the value starting at s[i].
func ValueEnd(s string, i int) int {
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = stringEnd(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(s)
	}
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at s[i]; s
// is valid JSON, so the string is closed.
func stringEnd(s string, i int) int {
	end, _ := StringEnd(s, i)
	return end
}

// FirstEntry returns the index of the first element or key of the
// container s, or -1 when it is empty.
func FirstEntry(s string) int {
	i := SkipSpace(s, 1)
	if i >= len(s) || s[i] == ']' || s[i] == '}' {
		return -1
	}
	return i
}

// NextEntry returns the index of the entry after the value ending at e, or
// -1 at the container's end.
func NextEntry(s string, e int) int {
	i := SkipSpace(s, e)
	if i >= len(s) || s[i] != ',' {
		return -1
	}
	return SkipSpace(s, i+1)
}

// ScanMember reads the member whose key starts at s[i] and returns the raw
// (still quoted) key and the bounds of its value.
func ScanMember(s string, i int) (key string, start, end int) {
	ke := stringEnd(s, i)
	start = SkipSpace(s, SkipSpace(s, ke)+1)
	return s[i:ke], start, ValueEnd(s, start)
}

// Elements yields the values of the array s.
func Elements(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := FirstEntry(s); i >= 0; {
			e := ValueEnd(s, i)
			if !yield(s[i:e]) {
				return
			}
			i = NextEntry(s, e)
		}
	}
}

// Members yields the raw (still quoted) keys and the values of the object s.
func Members(s string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := FirstEntry(s); i >= 0; {
			k, start, end := ScanMember(s, i)
			if !yield(k, s[start:end]) {
				return
			}
			i = NextEntry(s, end)
		}
	}
}

// DecodeString unquotes a JSON string span.
func DecodeString(raw string) string {
	// encoding/json turns each invalid UTF-8 byte into U+FFFD; only text
	// that is valid and unescaped decodes to itself.
	if len(raw) >= 2 && utf8.ValidString(raw) {
		if !strings.ContainsRune(raw, '\\') {
			return raw[1 : len(raw)-1]
		}
		if s, ok := unescape(raw[1 : len(raw)-1]); ok {
			return s
		}
	}
	var s string
	_ = json.Unmarshal([]byte(raw), &s) // raw came from validated JSON
	return s
}

// unescape decodes the escapes of a JSON string's valid UTF-8 body, in one
// allocation: a tier-1 call's code is JSON inside a JSON string, all
// escaped quotes, and encoding/json spent seven allocations on each. ok is
// false for what it leaves to encoding/json: a \u escape of a surrogate
// (pairs, and lone ones that become U+FFFD) and anything malformed.
func unescape(body string) (string, bool) {
	b := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i++; i >= len(body) {
			return "", false
		}
		switch body[i] {
		case '"', '\\', '/':
			b = append(b, body[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if i+4 >= len(body) {
				return "", false
			}
			r, err := strconv.ParseUint(body[i+1:i+5], 16, 16)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return "", false
			}
			b = utf8.AppendRune(b, rune(r))
			i += 4
		default:
			return "", false
		}
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}
