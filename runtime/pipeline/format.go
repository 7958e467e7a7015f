package pipeline

import (
	"strconv"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/textcut"
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

// appendJSONString appends s as a JSON string, keeping <, > and & as they
// are and writing invalid UTF-8 as U+FFFD, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	return jsontext.AppendString(dst, s, jsontext.ValidUTF8)
}

// clip shortens s to at most n bytes on a grapheme boundary, marking the cut
// with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:textcut.Before(s, n)] + "…"
}
