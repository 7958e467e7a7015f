package jsontext

import (
	"strings"
	"unicode/utf8"
)

// Flags choose between the spellings JSON allows for the same string.
type Flags uint8

const (
	// ShortControl writes \b and \f as two-byte escapes, as JSON.stringify
	// does; without it they are \u0008 and \u000c.
	ShortControl Flags = 1 << iota
	// ValidUTF8 writes each invalid UTF-8 byte as \ufffd, as encoding/json
	// does; without it such bytes pass through as they came, which a
	// caller wants when the string goes back where it was read from.
	ValidUTF8
)

// AppendString appends s to dst as a JSON string. Only quotes, backslashes
// and control characters are escaped: unlike encoding/json it leaves <, >
// and & alone, which would cost a model five bytes each for nothing.
func AppendString(dst []byte, s string, f Flags) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			if f&ValidUTF8 == 0 {
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c == '"', c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b' && f&ShortControl != 0:
			dst = append(dst, '\\', 'b')
		case c == '\f' && f&ShortControl != 0:
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// StringEnd returns the index just past the quote that closes the string
// opening at s[i], and false when the string is not closed. IndexByte is
// vectorized; most strings hold no escapes, and the backslash search only
// looks as far as the next quote.
func StringEnd(s string, i int) (int, bool) {
	for i++; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s), false
		}
		bs := strings.IndexByte(s[i:i+q], '\\')
		if bs < 0 {
			return i + q + 1, true
		}
		i += bs + 2
	}
	return len(s), false
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Depth returns the deepest nesting of arrays and objects in s, skipping
// strings; s need not be valid JSON. With stop above zero it returns as
// soon as the nesting passes stop, so a hostile input costs no more than
// its first stop+1 levels.
func Depth(s string, stop int) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			end, _ := StringEnd(s, i)
			i = end - 1
		case '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if stop > 0 && deepest > stop {
					return deepest
				}
			}
		case ']', '}':
			depth--
		}
	}
	return deepest
}
