package pipeline

import (
	"strconv"
	"unicode/utf8"
)

// kb renders a byte count the way the seed's markers do: KiB, one decimal.
func kb(n int) string {
	return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + "KB"
}

// footer renders the size footer. Percentages round down so a footer never
// claims more than was saved.
func footer(returned, processed int) string {
	pct := 0
	if processed > 0 {
		pct = int(int64(processed-returned) * 100 / int64(processed))
	}
	return "[Output: " + kb(returned) + " returned, " + kb(processed) + " processed, " +
		strconv.Itoa(pct) + "% reduced]"
}

// appendJSONString appends s as a JSON string. Unlike encoding/json it does
// not escape <, > and &, which would cost a model five bytes each for
// nothing; invalid UTF-8 becomes U+FFFD as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
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
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// clip shortens s to at most n bytes on a grapheme boundary, marking the cut
// with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:cutBefore(s, n)] + "…"
}
