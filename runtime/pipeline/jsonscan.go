package pipeline

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"
)

// parseContainer returns s trimmed when it is a valid JSON object or array:
// the documents jsontext's scanner may then walk. Chunking and the intent
// filter work on spans of the original text, so kept values reach the
// output byte for byte in their original key order.
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
