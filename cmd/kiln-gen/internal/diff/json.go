package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// decodeJSON decodes one JSON document with numbers kept as written. An
// empty document stands for the empty schema, which accepts anything.
func decodeJSON(raw []byte) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

// decodeObject decodes an optional JSON object such as tool annotations;
// absent and null both mean no keys.
func decodeObject(raw []byte) (map[string]any, bool) {
	v, ok := decodeJSON(raw)
	if !ok {
		return nil, false
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, true
	case map[string]any:
		return m, true
	}
	return nil, false
}

// canon is the comparison key of a decoded value: compact JSON with sorted
// keys (encoding/json sorts map keys) and numbers as written.
func canon(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "<unencodable>"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func compactText(raw []byte) string {
	c, err := manifest.Compact(raw)
	if err != nil {
		return string(raw)
	}
	return string(c)
}

// short keeps one-line messages readable; Old and New keep the full text.
func short(s string) string {
	const limit = 60
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-3]) + "..."
}

// asSchema accepts the two shapes a JSON Schema can take; booleans become
// their object equivalents so the comparison code sees one shape.
func asSchema(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case map[string]any:
		return t, true
	case bool:
		if t {
			return map[string]any{}, true
		}
		return map[string]any{"not": map[string]any{}}, true
	}
	return nil, false
}

// resolvePointer follows the JSON Pointer in a "#..." $ref fragment.
func resolvePointer(root any, frag string) (any, bool) {
	if u, err := url.PathUnescape(frag); err == nil {
		frag = u
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // a named anchor; not resolved
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			next, ok := t[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) || strconv.Itoa(i) != tok {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// number reads a JSON number; out-of-range values become ±Inf, which still
// order correctly against ordinary bounds.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// join appends a property name to a path. Names that would make the path
// ambiguous ("a.b", "*", "x[]") are written in brackets, quoted.
func join(path, name string) string {
	if !plainSegment(name) {
		return path + "[" + strconv.Quote(name) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

func joinStar(path string) string {
	if path == "" {
		return "*"
	}
	return path + ".*"
}

func plainSegment(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if strings.ContainsRune(`.[]"*\`, r) || unicode.IsSpace(r) || !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}
