package jslit

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of literals; deeper input is refused.
const MaxDepth = 200

// Literal parses the JS literal value starting at toks[i] — a string,
// number (optionally signed), true, false, null, or an array or object
// literal of those, with unquoted or numeric keys and trailing commas — and
// returns it as the JSON text JSON.stringify would produce, with the index
// of the next token. ok is false for anything else: identifiers as values,
// spread, computed or shorthand keys, methods, holes, `__proto__` keys
// (which set the prototype instead of a property).
func Literal(toks []Token, i int) (json []byte, next int, ok bool) {
	p := &litParser{toks: toks, i: i}
	var buf bytes.Buffer
	if !p.value(&buf, 0) {
		return nil, i, false
	}
	return buf.Bytes(), p.i, true
}

// Reencode returns JSON.stringify(JSON.parse(raw)): duplicate keys keep
// their first position and last value, integer-like keys move first in
// ascending order, numbers take their ECMAScript form and overflow to null.
func Reencode(raw []byte) ([]byte, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	toks, ok := Tokenize(string(raw))
	if !ok {
		return nil, false
	}
	p := &litParser{toks: toks, json: true}
	var buf bytes.Buffer
	if !p.value(&buf, 0) || p.toks[p.i].Kind != EOF {
		return nil, false
	}
	return buf.Bytes(), true
}

type litParser struct {
	toks []Token
	i    int
	// json selects JSON.parse semantics: `__proto__` is an ordinary key and
	// numbers too large for a double become null.
	json bool
}

func (p *litParser) next() Token {
	t := p.toks[p.i]
	if t.Kind != EOF {
		p.i++
	}
	return t
}

func (p *litParser) punct(s string) bool {
	if t := p.toks[p.i]; t.Kind == Punct && t.Text == s {
		p.i++
		return true
	}
	return false
}

func (p *litParser) value(buf *bytes.Buffer, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	t := p.next()
	switch t.Kind {
	case String:
		buf.WriteString(t.Text)
		return true
	case Number:
		return p.number(buf, t.Num)
	case Ident:
		switch t.Text {
		case "true", "false", "null":
			buf.WriteString(t.Text)
			return true
		}
		return false
	case Punct:
		switch t.Text {
		case "-", "+":
			n := p.next()
			if n.Kind != Number || (p.json && t.Text == "+") {
				return false
			}
			if t.Text == "-" {
				n.Num = -n.Num
			}
			return p.number(buf, n.Num)
		case "[":
			return p.array(buf, depth)
		case "{":
			return p.object(buf, depth)
		}
	}
	return false
}

func (p *litParser) number(buf *bytes.Buffer, f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		// The tokenizer refuses such literals; in JSON mode they would be
		// Infinity, which JSON.stringify writes as null.
		if !p.json {
			return false
		}
		buf.WriteString("null")
		return true
	}
	buf.WriteString(FormatNumber(f))
	return true
}

func (p *litParser) array(buf *bytes.Buffer, depth int) bool {
	buf.WriteByte('[')
	for n := 0; !p.punct("]"); n++ {
		if n > 0 {
			buf.WriteByte(',')
		}
		if !p.value(buf, depth+1) {
			return false
		}
		if !p.punct(",") {
			if !p.punct("]") {
				return false
			}
			break
		}
	}
	buf.WriteByte(']')
	return true
}

type member struct {
	key   string // decoded
	quote string // the key as a JSON string literal
	value []byte // JSON
}

func (p *litParser) object(buf *bytes.Buffer, depth int) bool {
	var members []member
	index := map[string]int{}
	for !p.punct("}") {
		key, quote, ok := p.key()
		if !ok || !p.punct(":") {
			return false
		}
		var v bytes.Buffer
		if !p.value(&v, depth+1) {
			return false
		}
		// A repeated key keeps its first position and its last value, in
		// object literals and in JSON.parse alike.
		if i, dup := index[key]; dup {
			members[i].value = v.Bytes()
		} else {
			index[key] = len(members)
			members = append(members, member{key, quote, v.Bytes()})
		}
		if !p.punct(",") {
			if !p.punct("}") {
				return false
			}
			break
		}
	}
	// Property enumeration lists integer-like keys first, ascending, then
	// the rest in insertion order; JSON.stringify follows it.
	slices.SortStableFunc(members, func(a, b member) int {
		ai, aok := arrayIndex(a.key)
		bi, bok := arrayIndex(b.key)
		switch {
		case aok && bok:
			return int(ai - bi)
		case aok:
			return -1
		case bok:
			return 1
		}
		return 0
	})
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(m.quote)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return true
}

// key parses a property name. In an object literal a non-computed
// `__proto__` sets the prototype, so it is refused there.
func (p *litParser) key() (key, quote string, ok bool) {
	t := p.next()
	switch t.Kind {
	case Ident:
		if p.json {
			return "", "", false
		}
		key, quote = t.Text, `"`+t.Text+`"`
	case Number:
		if p.json {
			return "", "", false
		}
		key = FormatNumber(t.Num)
		quote = `"` + key + `"`
	case String:
		// Keys with lone surrogates have no Go string form; refuse them
		// rather than merge distinct keys.
		if json.Unmarshal([]byte(t.Text), &key) != nil || (strings.ContainsRune(key, utf8.RuneError) && strings.Contains(t.Text, `\u`)) {
			return "", "", false
		}
		quote = t.Text
	default:
		return "", "", false
	}
	return key, quote, p.json || key != "__proto__"
}

// arrayIndex reports whether k is a canonical array index (0 … 2³²−2).
func arrayIndex(k string) (int64, bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && k != "0") {
		return 0, false
	}
	n, err := strconv.ParseInt(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, strconv.FormatInt(n, 10) == k
}
