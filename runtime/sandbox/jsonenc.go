package sandbox

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// maxJSONDepth bounds the nesting JSON.stringify and JSON.parse accept.
const maxJSONDepth = 1000

// stringifyJSON is JSON.stringify without a replacer, written in Go with a
// size cap. goja's native stringify cannot be interrupted and expands a
// DAG of shared references (x = [x, x] forty times) to 2^40 copies in one
// step; this one stops at cap bytes and at maxJSONDepth. A replacer in JS
// can do the same, but costs a JS call per value (about 10× slower).
// It panics with a goja exception, as a native function throws.
//
// keys, when not nil, is the property list of an array replacer: objects
// then serialize those keys, in that order.
func (r *run) stringifyJSON(v, space goja.Value, cap int, keys []string) goja.Value {
	w := jsonWriter{r: r, cap: cap, gap: jsonGap(space), keys: keys}
	holder := r.rt.NewObject()
	if !w.value(holder, "", v) {
		return goja.Undefined()
	}
	return r.rt.ToValue(string(w.buf))
}

func jsonGap(space goja.Value) string {
	if space == nil || goja.IsUndefined(space) || goja.IsNull(space) {
		return ""
	}
	if o, ok := space.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			space = goja.Value(o).ToNumber()
		case "String":
			space = o.ToString()
		default:
			return ""
		}
	}
	if goja.IsNumber(space) {
		n := space.ToFloat()
		if n >= 1 {
			return strings.Repeat(" ", int(math.Min(10, n)))
		}
		return ""
	}
	if goja.IsString(space) {
		s := space.String()
		if utf8.RuneCountInString(s) > 10 {
			s = string([]rune(s)[:10])
		}
		return s
	}
	return ""
}

type jsonWriter struct {
	r     *run
	buf   []byte
	cap   int
	gap   string
	keys  []string
	stack []*goja.Object
}

func (w *jsonWriter) grow() {
	if len(w.buf) > w.cap {
		w.r.throwRange("JSON text of more than " + strconv.Itoa(w.cap) + " characters would exceed the sandbox limit; work on smaller pieces")
	}
}

var boolType = reflect.TypeOf(true)

// value writes holder[key] = v as JSON; it reports false when v has no
// JSON form (undefined, functions, symbols).
func (w *jsonWriter) value(holder *goja.Object, key string, v goja.Value) bool {
	rt := w.r.rt
	if o, ok := v.(*goja.Object); ok {
		if fn, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			res, err := fn(o, rt.ToValue(key))
			if err != nil {
				panic(err)
			}
			v = res
		}
	}
	if o, ok := v.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			v = goja.Value(o).ToNumber()
		case "String":
			v = o.ToString()
		case "Boolean":
			b, _ := o.Export().(bool)
			v = rt.ToValue(b)
		}
	}
	switch {
	case v == nil || goja.IsUndefined(v):
		return false
	case goja.IsNull(v):
		w.buf = append(w.buf, "null"...)
	case goja.IsString(v):
		w.buf = appendJSONValue(w.buf, v)
	case goja.IsNumber(v):
		if f := v.ToFloat(); math.IsNaN(f) || math.IsInf(f, 0) {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = append(w.buf, v.String()...)
		}
	case v.ExportType() == boolType:
		w.buf = strconv.AppendBool(w.buf, v.ToBoolean())
	default:
		o, ok := v.(*goja.Object)
		if !ok {
			return false // symbols
		}
		if _, callable := goja.AssertFunction(o); callable {
			return false
		}
		w.object(o)
	}
	w.grow()
	return true
}

func (w *jsonWriter) object(o *goja.Object) {
	for _, p := range w.stack {
		if p == o {
			panic(w.r.rt.NewTypeError("Converting circular structure to JSON"))
		}
	}
	if len(w.stack) >= maxJSONDepth {
		w.r.throwRange("JSON nesting deeper than " + strconv.Itoa(maxJSONDepth) + " levels would exceed the sandbox limit")
	}
	w.stack = append(w.stack, o)
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	indent := strings.Repeat(w.gap, len(w.stack))
	if o.ClassName() == "Array" {
		n := o.Get("length").ToInteger()
		if n == 0 {
			w.buf = append(w.buf, "[]"...)
			return
		}
		w.buf = append(w.buf, '[')
		for i := int64(0); i < n; i++ {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.newline(indent)
			k := strconv.FormatInt(i, 10)
			if !w.value(o, k, o.Get(k)) {
				w.buf = append(w.buf, "null"...)
			}
			w.grow()
		}
		w.newline(indent[:len(indent)-len(w.gap)])
		w.buf = append(w.buf, ']')
		return
	}
	w.buf = append(w.buf, '{')
	empty := true
	keys := w.keys
	if keys == nil {
		keys = o.Keys()
	}
	for _, k := range keys {
		mark := len(w.buf)
		if !empty {
			w.buf = append(w.buf, ',')
		}
		w.newline(indent)
		w.buf = appendJSONString(w.buf, k)
		w.buf = append(w.buf, ':')
		if w.gap != "" {
			w.buf = append(w.buf, ' ')
		}
		if !w.value(o, k, o.Get(k)) {
			w.buf = w.buf[:mark]
			continue
		}
		empty = false
	}
	if !empty {
		w.newline(indent[:len(indent)-len(w.gap)])
	}
	w.buf = append(w.buf, '}')
}

func (w *jsonWriter) newline(indent string) {
	if w.gap != "" {
		w.buf = append(w.buf, '\n')
		w.buf = append(w.buf, indent...)
	}
}

// appendJSONValue quotes a JS string. Lone surrogates, which a Go string
// cannot hold, are written as \u escapes as JSON.stringify writes them.
func appendJSONValue(buf []byte, v goja.Value) []byte {
	s := v.String()
	if !strings.ContainsRune(s, utf8.RuneError) {
		return appendJSONString(buf, s)
	}
	const hex = "0123456789abcdef"
	js, ok := v.(goja.String)
	if !ok {
		return appendJSONString(buf, s)
	}
	var units []uint16
	for i := range js.Length() {
		units = append(units, js.CharAt(i))
	}
	buf = append(buf, '"')
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case utf16.IsSurrogate(rune(u)) && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000:
			buf = utf8.AppendRune(buf, utf16.DecodeRune(rune(u), rune(units[i+1])))
			i++
		case utf16.IsSurrogate(rune(u)):
			buf = append(buf, '\\', 'u', hex[u>>12], hex[(u>>8)&0xf], hex[(u>>4)&0xf], hex[u&0xf])
		default:
			q := appendJSONString(nil, string(rune(u)))
			buf = append(buf, q[1:len(q)-1]...)
		}
	}
	return append(buf, '"')
}

// appendJSONString quotes s as JSON.stringify does: only quotes,
// backslashes and control characters are escaped.
func appendJSONString(buf []byte, s string) []byte {
	return jsontext.AppendString(buf, s, jsontext.ShortControl)
}

// join is Array.prototype.join for n elements of o, capped at max
// characters. goja's StringBuilder keeps lone surrogates intact.
func (r *run) join(o *goja.Object, n int64, sep goja.Value, max int) goja.Value {
	sepStr, _ := sep.(goja.String)
	if sepStr == nil {
		sepStr = sep.ToString().(goja.String)
	}
	var b goja.StringBuilder
	size := 0
	for i := int64(0); i < n; i++ {
		if i > 0 {
			b.WriteString(sepStr)
			size += sepStr.Length()
		}
		v := o.Get(strconv.FormatInt(i, 10))
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			continue
		}
		if _, ok := v.(*goja.Symbol); ok {
			panic(r.rt.NewTypeError("Cannot convert a Symbol value to a string"))
		}
		s, ok := v.(goja.String)
		if !ok {
			s, _ = v.ToString().(goja.String)
		}
		if s == nil {
			continue
		}
		size += s.Length()
		if size > max {
			r.throwRange("a joined string of more than " + strconv.Itoa(max) + " characters would exceed the sandbox limit; work on smaller pieces")
		}
		b.WriteString(s)
	}
	return b.String()
}

// throwRange throws a RangeError into the running script.
func (r *run) throwRange(msg string) {
	if e, err := r.rangeError(nil, r.rt.ToValue(msg)); err == nil {
		panic(e)
	}
	panic(r.rt.NewTypeError(msg))
}
