package pipeline

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// The scanner below walks JSON that json.Valid has already accepted, so it
// only finds value boundaries and never validates. It works on spans of the
// original text: no tree is built, nothing is decoded that is not shown, and
// kept values reach the output byte for byte in their original key order.

// parseContainer returns s trimmed when it is a valid JSON object or array.
func parseContainer(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 {
		return "", false
	}
	if !(t[0] == '{' && t[len(t)-1] == '}') && !(t[0] == '[' && t[len(t)-1] == ']') {
		return "", false
	}
	if !json.Valid([]byte(t)) {
		return "", false
	}
	return t, true
}

// valueEnd returns the index just past the value starting at s[i].
func valueEnd(s string, i int) int {
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
	end, _ := jsontext.StringEnd(s, i)
	return end
}

// firstEntry returns the index of the first element or key of the
// container s, or -1 when it is empty.
func firstEntry(s string) int {
	i := jsontext.SkipSpace(s, 1)
	if i >= len(s) || s[i] == ']' || s[i] == '}' {
		return -1
	}
	return i
}

// nextEntry returns the index of the entry after the value ending at e, or
// -1 at the container's end.
func nextEntry(s string, e int) int {
	i := jsontext.SkipSpace(s, e)
	if i >= len(s) || s[i] != ',' {
		return -1
	}
	return jsontext.SkipSpace(s, i+1)
}

// scanMember reads the member whose key starts at s[i] and returns the raw
// (still quoted) key and the bounds of its value.
func scanMember(s string, i int) (key string, start, end int) {
	ke := stringEnd(s, i)
	start = jsontext.SkipSpace(s, jsontext.SkipSpace(s, ke)+1)
	return s[i:ke], start, valueEnd(s, start)
}

// elements yields the values of the array s.
func elements(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := firstEntry(s); i >= 0; {
			e := valueEnd(s, i)
			if !yield(s[i:e]) {
				return
			}
			i = nextEntry(s, e)
		}
	}
}

// members yields the raw (still quoted) keys and the values of the object s.
func members(s string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := firstEntry(s); i >= 0; {
			k, start, end := scanMember(s, i)
			if !yield(k, s[start:end]) {
				return
			}
			i = nextEntry(s, end)
		}
	}
}

// decodeString unquotes a JSON string span.
func decodeString(raw string) string {
	if len(raw) >= 2 && !strings.ContainsRune(raw, '\\') {
		return raw[1 : len(raw)-1]
	}
	var s string
	_ = json.Unmarshal([]byte(raw), &s) // raw came from validated JSON
	return s
}

func count(seq iter.Seq[string]) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// compact writes v without insignificant whitespace.
func compact(dst *bytes.Buffer, v string) {
	if !strings.ContainsAny(v, " \t\r\n") {
		dst.WriteString(v)
		return
	}
	_ = json.Compact(dst, []byte(v)) // v came from validated JSON
}
