package bridge

import (
	"slices"
	"strconv"
)

// reserved are names a preamble binding must not take: ECMAScript reserved
// words (including strict-mode and contextual ones, which goja rejects as
// binding names in some positions) and globals the sandbox or scripts rely
// on. Overwriting console or JSON with a backend object would break every
// script, so such names get a trailing underscore instead.
var reserved = setOf(
	// keywords and literals
	"await", "break", "case", "catch", "class", "const", "continue", "debugger",
	"default", "delete", "do", "else", "enum", "export", "extends", "false",
	"finally", "for", "function", "if", "import", "in", "instanceof", "new",
	"null", "return", "super", "switch", "this", "throw", "true", "try",
	"typeof", "var", "void", "while", "with", "yield", "let", "static",
	"implements", "interface", "package", "private", "protected", "public",
	"arguments", "eval",
	// standard globals
	"globalThis", "undefined", "NaN", "Infinity", "Object", "Function", "Array",
	"Number", "Boolean", "String", "Symbol", "BigInt", "Date", "Promise", "RegExp",
	"Error", "AggregateError", "EvalError", "RangeError", "ReferenceError",
	"SyntaxError", "TypeError", "URIError", "JSON", "Math", "Reflect", "Proxy",
	"Map", "Set", "WeakMap", "WeakSet", "WeakRef", "ArrayBuffer", "DataView",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array",
	"BigUint64Array", "parseInt", "parseFloat", "isNaN", "isFinite", "decodeURI",
	"decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
	"Intl", "Atomics", "SharedArrayBuffer",
	// host helpers a sandbox commonly installs
	"console", "print", "setTimeout", "setInterval", "clearTimeout", "clearInterval",
	"queueMicrotask", "structuredClone", "fetch", "require", "module", "exports",
	"process", "Buffer", "atob", "btoa", "TextEncoder", "TextDecoder", "URL",
	"URLSearchParams",
	// the bridge's own names and prototype hooks
	"__kiln_call", "__interfaces", "__getToolInterface", "__proto__",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Ident turns a backend or tool name into a JavaScript identifier: every
// character outside [A-Za-z0-9_] becomes '_' (one per character, so the
// result stays recognisable), a leading digit gets a '_' prefix, and reserved
// words and protected globals get a '_' suffix. Non-ASCII letters are
// replaced too: they are valid JS, but the tier-2 call parser and most
// models only handle ASCII identifiers reliably.
func Ident(name string) string {
	b := make([]byte, 0, len(name)+2)
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "_"
	}
	if b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	s := string(b)
	if reserved[s] {
		s += "_"
	}
	return s
}

// assign gives every name a distinct identifier. Names that are already
// valid identifiers keep themselves, so `github.create_issue` is what a model
// would guess; the others take Ident(name) and, when that is taken, a numeric
// suffix. Both passes go in sorted order, so the result depends only on the
// set of names.
func assign(names []string) map[string]string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]string, len(sorted))
	used := make(map[string]bool, len(sorted))
	for _, n := range sorted {
		if Ident(n) == n {
			out[n] = n
			used[n] = true
		}
	}
	for _, n := range sorted {
		if _, done := out[n]; done {
			continue
		}
		id := Ident(n)
		c := id
		for i := 2; used[c]; i++ {
			c = id + "_" + strconv.Itoa(i)
		}
		out[n] = c
		used[c] = true
	}
	return out
}
