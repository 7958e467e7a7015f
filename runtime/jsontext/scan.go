package jsontext

import (
	"encoding/json"
	"iter"
	"strings"
	"unicode/utf8"
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
	if len(raw) >= 2 && !strings.ContainsRune(raw, '\\') && utf8.ValidString(raw) {
		return raw[1 : len(raw)-1]
	}
	var s string
	_ = json.Unmarshal([]byte(raw), &s) // raw came from validated JSON
	return s
}
