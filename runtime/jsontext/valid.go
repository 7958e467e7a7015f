package jsontext

import (
	"bytes"
	"encoding/json"
)

// maxDepth is encoding/json's nesting limit: Valid agrees with json.Valid
// on text nested deeper too.
const maxDepth = 10000

// Valid reports whether b is one JSON value with optional white space
// around it, exactly as json.Valid does (like it, it does not check that
// strings are valid UTF-8). encoding/json's scanner calls a function per
// byte; this loop is several times faster, and the hot path checks every
// tools/call line and the raw parts of its result (FuzzValid, BenchmarkValid).
func Valid(b []byte) bool {
	v := validator{b: b}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(b)
}

type validator struct {
	b []byte
	i int
}

func (v *validator) space() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) value(depth int) bool {
	if v.i >= len(v.b) {
		return false
	}
	switch c := v.b[v.i]; {
	case c == '{':
		return v.object(depth + 1)
	case c == '[':
		return v.array(depth + 1)
	case c == '"':
		return v.str()
	case c == 't':
		return v.word("true")
	case c == 'f':
		return v.word("false")
	case c == 'n':
		return v.word("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number()
	}
	return false
}

func (v *validator) object(depth int) bool {
	return v.container(depth, '}', func() bool {
		if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
			return false
		}
		v.space()
		if v.i >= len(v.b) || v.b[v.i] != ':' {
			return false
		}
		v.i++
		v.space()
		return v.value(depth)
	})
}

func (v *validator) array(depth int) bool {
	return v.container(depth, ']', func() bool { return v.value(depth) })
}

// container reads an object or array whose opening byte is at v.i: entries
// read by entry, separated by commas, up to end.
func (v *validator) container(depth int, end byte, entry func() bool) bool {
	if depth > maxDepth {
		return false
	}
	v.i++
	v.space()
	if v.i < len(v.b) && v.b[v.i] == end {
		v.i++
		return true
	}
	for {
		if !entry() {
			return false
		}
		v.space()
		if v.i >= len(v.b) {
			return false
		}
		switch v.b[v.i] {
		case ',':
			v.i++
			v.space()
		case end:
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) str() bool {
	b := v.b
	for i := v.i + 1; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			v.i = i + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			i++
			continue
		}
		if i+1 >= len(b) {
			return false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) {
				return false
			}
			for _, h := range b[i+2 : i+6] {
				if !isHex(h) {
					return false
				}
			}
			i += 6
		default:
			return false
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (v *validator) word(w string) bool {
	if len(v.b)-v.i < len(w) || string(v.b[v.i:v.i+len(w)]) != w {
		return false
	}
	v.i += len(w)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (v *validator) number() bool {
	b, i := v.b, v.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	v.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// AppendLine appends raw, one JSON value, to dst on one line (compacted
// only when it holds a line break: on stdio a line is a message), and
// reports false, appending nothing, when raw is not valid JSON.
func AppendLine(dst, raw []byte) ([]byte, bool) {
	if !Valid(raw) {
		return dst, false
	}
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(dst, raw...), true
	}
	b := bytes.NewBuffer(dst)
	_ = json.Compact(b, raw) // valid, above
	return b.Bytes(), true
}
