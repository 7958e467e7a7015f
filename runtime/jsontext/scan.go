package jsontext

import (
	"encoding/json"
	"iter"
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
		if s, ok := Unescape(raw[1 : len(raw)-1]); ok {
			return s
		}
	}
	var s string
	_ = json.Unmarshal([]byte(raw), &s) // raw came from validated JSON
	return s
}

// Unescape decodes the escapes of a JSON string's body (the text between
// its quotes) as encoding/json does, a lone or broken surrogate becoming
// U+FFFD; ok is false for a malformed escape. Bytes that are not escapes
// are copied as they are: the caller decides what invalid UTF-8 means.
// The text is never longer than body, so it is written into one buffer
// by index: a tier-1 call's code is JSON inside a JSON string, an escape
// every few bytes, and encoding/json spent seven allocations on it.
func Unescape(body string) (string, bool) {
	out := make([]byte, len(body))
	w := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out[w] = c
			w++
			continue
		}
		if i++; i >= len(body) {
			return "", false
		}
		switch c = body[i]; c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, ok := hex4(body, i+1)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := hex4(body, i+3)
				if d := utf16.DecodeRune(r, r2); ok && body[i+1] == '\\' && body[i+2] == 'u' && d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			w += utf8.EncodeRune(out[w:], r)
			continue
		default:
			return "", false
		}
		out[w] = c
		w++
	}
	return StringView(out[:w]), true
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// StringView is b as a string, sharing its bytes: for scanning a line the
// caller owns without copying it. b must not change while the string or
// anything cut from it is in use.
func StringView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// BytesView is s, a string from StringView or a part of one, as the bytes
// it shares; its capacity is its length, so an append copies instead of
// writing into the rest of the line. Never pass a string that did not
// come from a []byte: its bytes may be read-only.
func BytesView(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
