package schema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// quick is a check compiled from a schema that uses only the keywords most
// tool schemas are made of (type, properties, required,
// additionalProperties, items, scalar enums, length, item-count and
// integer bounds). It reads the arguments' bytes once without decoding
// them, and it only ever proves arguments valid: when it answers false
// (invalid, or a value it does not judge, such as 1.0 for an integer),
// Validate runs the full validator, which also writes the error.
//
// Decoding the arguments for jsonschema and walking its compiled schema
// cost ~20 µs of a tier-1 call's CPU, twice per call (call_tool_chain's own
// arguments, then the backend tool's); quick takes well under a
// microsecond for the usual few arguments (BenchmarkValidate).
type quick struct {
	types    typeSet // 0: any type
	props    map[string]*quick
	required []string
	// additional checks properties that props does not name; nil allows
	// any, and noAdditional refuses them.
	additional   *quick
	noAdditional bool
	items        *quick // nil: any items
	enum         []string
	// Bounds, or -1 (math.MinInt64 for minimum, MaxInt64 for maximum)
	// for none.
	minLength, maxLength int
	minItems, maxItems   int
	minimum, maximum     int64
}

type typeSet uint8

const (
	typeObject typeSet = 1 << iota
	typeArray
	typeString
	typeNumber
	typeInteger
	typeBoolean
	typeNull
)

var typeNames = map[string]typeSet{"object": typeObject, "array": typeArray, "string": typeString,
	"number": typeNumber, "integer": typeInteger, "boolean": typeBoolean, "null": typeNull}

// annotations are keywords that never change whether an instance is
// valid (format too, from draft 2019-09 on, which is how kiln compiles:
// see quickCompile).
var annotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "markdownDescription": true}

// quickCompile returns the quick check for a decoded schema document (as
// jsonschema.UnmarshalJSON decodes it), or nil when the schema uses
// anything quick does not judge. A $schema other than draft 2019-09 or
// 2020-12 keeps format assertions on, so format is then not an
// annotation.
func quickCompile(doc any) *quick {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	formatIsAnnotation := true
	if s, has := root["$schema"]; has {
		uri, isString := s.(string)
		if !isString {
			return nil
		}
		formatIsAnnotation = strings.Contains(uri, "2019-09") || strings.Contains(uri, "2020-12")
	}
	return quickNode(root, formatIsAnnotation, true)
}

func quickNode(v any, formatIsAnnotation, root bool) *quick {
	if b, ok := v.(bool); ok && b {
		return &quick{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minimum: math.MinInt64, maximum: math.MaxInt64}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	q := &quick{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minimum: math.MinInt64, maximum: math.MaxInt64}
	for k, val := range m {
		switch {
		case annotations[k]:
		case k == "format" && formatIsAnnotation:
		case k == "$schema" && root:
		case k == "type":
			if q.types = quickTypes(val); q.types == 0 {
				return nil
			}
		case k == "properties":
			props, ok := val.(map[string]any)
			if !ok {
				return nil
			}
			q.props = make(map[string]*quick, len(props))
			for name, sub := range props {
				if q.props[name] = quickNode(sub, formatIsAnnotation, false); q.props[name] == nil {
					return nil
				}
			}
		case k == "required":
			list, ok := val.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				name, ok := r.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, name)
			}
		case k == "additionalProperties":
			if b, ok := val.(bool); ok && !b {
				q.noAdditional = true
			} else if q.additional = quickNode(val, formatIsAnnotation, false); q.additional == nil {
				return nil
			}
		case k == "items":
			if q.items = quickNode(val, formatIsAnnotation, false); q.items == nil {
				return nil
			}
		case k == "enum":
			list, ok := val.([]any)
			if !ok || len(list) == 0 {
				return nil
			}
			for _, e := range list {
				raw, ok := scalarJSON(e)
				if !ok {
					return nil
				}
				q.enum = append(q.enum, raw)
			}
		case k == "minLength", k == "maxLength", k == "minItems", k == "maxItems":
			n, ok := quickInt(val)
			if !ok || n < 0 || n > math.MaxInt32 {
				return nil
			}
			switch k {
			case "minLength":
				q.minLength = int(n)
			case "maxLength":
				q.maxLength = int(n)
			case "minItems":
				q.minItems = int(n)
			default:
				q.maxItems = int(n)
			}
		case k == "minimum", k == "maximum":
			n, ok := quickInt(val)
			if !ok {
				return nil
			}
			if k == "minimum" {
				q.minimum = n
			} else {
				q.maximum = n
			}
		default:
			return nil
		}
	}
	return q
}

func quickTypes(v any) typeSet {
	switch t := v.(type) {
	case string:
		return typeNames[t]
	case []any:
		var set typeSet
		for _, e := range t {
			name, ok := e.(string)
			if !ok || typeNames[name] == 0 {
				return 0
			}
			set |= typeNames[name]
		}
		return set
	}
	return 0
}

// quickInt reads a schema number that is an integer literal ("5", not
// "5.0"); the instance side compares integer literals only, so bounds and
// values compare exactly.
func quickInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// scalarJSON is an enum value's JSON text when it is a string, boolean or
// null: instances are compared by their raw token, so "\u0061" does not
// match "a" and goes to the full validator, which is fine.
func scalarJSON(v any) (string, bool) {
	switch v.(type) {
	case string, bool, nil:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
	return "", false
}

// valid reports whether args, one JSON object, certainly satisfies q.
func (q *quick) valid(args []byte) bool {
	if len(args) == 0 || !jsontext.Valid(args) {
		return false
	}
	// A view, not a copy: args is not changed while valid runs, and a
	// program's text can be large.
	s := scanner{s: unsafe.String(unsafe.SliceData(args), len(args))}
	s.i = jsontext.SkipSpace(s.s, 0)
	return s.s[s.i] == '{' && s.value(q)
}

// scanner walks JSON text that json.Valid accepted.
type scanner struct {
	s string
	i int
}

// value checks the value at s.i against q and moves past it.
func (s *scanner) value(q *quick) bool {
	s.i = jsontext.SkipSpace(s.s, s.i)
	start := s.i
	switch c := s.s[s.i]; {
	case c == '{':
		return s.object(q)
	case c == '[':
		return s.array(q)
	}
	s.i = jsontext.ValueEnd(s.s, s.i)
	token := s.s[start:s.i]
	switch c := token[0]; {
	case c == '"':
		return q.accepts(typeString) && q.enumHas(token) && q.stringLength(token)
	case c == 't' || c == 'f':
		return q.accepts(typeBoolean) && q.enumHas(token)
	case c == 'n':
		return q.accepts(typeNull) && q.enumHas(token)
	default:
		return q.number(token)
	}
}

func (q *quick) accepts(t typeSet) bool { return q.types == 0 || q.types&t != 0 }

func (q *quick) enumHas(token string) bool {
	if q.enum == nil {
		return true
	}
	for _, e := range q.enum {
		if e == string(token) {
			return true
		}
	}
	return false
}

func (q *quick) stringLength(token string) bool {
	if q.minLength < 0 && q.maxLength < 0 {
		return true
	}
	text := token[1 : len(token)-1]
	n := utf8.RuneCountInString(text)
	if strings.IndexByte(text, '\\') >= 0 {
		n = escapedRunes(text)
	}
	return (q.minLength < 0 || n >= q.minLength) && (q.maxLength < 0 || n <= q.maxLength)
}

// escapedRunes counts the characters a JSON string's text decodes to, as
// encoding/json decodes it: an escape is one character, except a \u pair
// of surrogates, which is one together; an invalid UTF-8 byte is one
// (U+FFFD), as in utf8.RuneCount.
func escapedRunes(text string) int {
	n := 0
	for i := 0; i < len(text); n++ {
		if text[i] != '\\' {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		if text[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(text[i+2 : i+6])
		i += 6
		if utf16.IsSurrogate(r) && r < 0xdc00 && i+6 <= len(text) && text[i] == '\\' && text[i+1] == 'u' {
			if lo := hex4(text[i+2 : i+6]); lo >= 0xdc00 && lo < 0xe000 {
				i += 6
			}
		}
	}
	return n
}

func hex4(b string) rune {
	var r rune
	for _, c := range []byte(b) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// number judges a number token: only integer literals are compared or
// called integers (1.0 and 1e2 are integers to JSON Schema too, but the
// full validator decides those).
func (q *quick) number(token string) bool {
	if q.enum != nil {
		return false
	}
	integral := !strings.ContainsAny(token, ".eE")
	bounded := q.minimum != math.MinInt64 || q.maximum != math.MaxInt64
	switch {
	case q.types != 0 && q.types&typeNumber == 0 && !(integral && q.types&typeInteger != 0):
		return false
	case !bounded:
		return true
	case !integral:
		return false
	}
	n, err := strconv.ParseInt(token, 10, 64)
	return err == nil && n >= q.minimum && n <= q.maximum
}

func (s *scanner) object(q *quick) bool {
	if !q.accepts(typeObject) || q.enum != nil || len(q.required) > 64 {
		return false
	}
	var seen uint64 // bit i: required[i] present
	s.i++           // {
	for {
		s.i = jsontext.SkipSpace(s.s, s.i)
		switch s.s[s.i] {
		case '}':
			s.i++
			return seen == 1<<len(q.required)-1
		case ',':
			s.i = jsontext.SkipSpace(s.s, s.i+1)
		}
		start := s.i
		s.i, _ = jsontext.StringEnd(s.s, s.i)
		key := s.s[start+1 : s.i-1]
		if strings.IndexByte(key, '\\') >= 0 {
			var ok bool
			if key, ok = unescape(s.s[start:s.i]); !ok {
				return false
			}
		}
		if !utf8.ValidString(key) {
			// The decoder turns each bad byte into U+FFFD: two keys may
			// become one.
			return false
		}
		s.i = jsontext.SkipSpace(s.s, s.i) + 1 // past the colon
		sub := q.props[key]
		switch {
		case sub != nil:
		case q.noAdditional:
			return false
		case q.additional != nil:
			sub = q.additional
		}
		if sub == nil {
			s.i = jsontext.ValueEnd(s.s, jsontext.SkipSpace(s.s, s.i))
		} else if !s.value(sub) {
			return false
		}
		for i, r := range q.required {
			if r == key {
				seen |= 1 << i
			}
		}
	}
}

// unescape decodes a key written with escapes (kept apart so that the
// common key does not escape to the heap).
func unescape(token string) (string, bool) {
	var k string
	err := json.Unmarshal([]byte(token), &k)
	return k, err == nil
}

func (s *scanner) array(q *quick) bool {
	if !q.accepts(typeArray) || q.enum != nil {
		return false
	}
	s.i++ // [
	n := 0
	for {
		s.i = jsontext.SkipSpace(s.s, s.i)
		switch s.s[s.i] {
		case ']':
			s.i++
			return (q.minItems < 0 || n >= q.minItems) && (q.maxItems < 0 || n <= q.maxItems)
		case ',':
			s.i++
			continue
		}
		if q.items == nil {
			s.i = jsontext.ValueEnd(s.s, s.i)
		} else if !s.value(q.items) {
			return false
		}
		n++
	}
}
