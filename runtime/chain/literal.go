package chain

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/chain/jslit"
)

// LiteralCall is a tier-2 request: one backend tool call with literal
// arguments, written in TypeScript plain enough to run without the JS
// engine.
type LiteralCall struct {
	// Object and Tool are the names exactly as written: an identifier
	// (`exa`, `my_backend`) or the contents of a string member
	// (`globalThis['my-backend']`, `b['tool name']`). The caller resolves
	// them through the bridge's lookup table and falls through to tier 3
	// when they do not resolve, so the sandbox reports the error with hints.
	Object, Tool string
	// Args is the argument object as strict JSON, exactly what
	// JSON.stringify would send from the sandbox; `{}` for a call with no
	// argument.
	Args json.RawMessage
}

// ParseLiteralCall recognizes a single backend call:
//
//	const r = await b.t({...}); return r;
//	return await b.t({...})
//	b.t({...})
//
// with `globalThis.b` / `globalThis['b']` receivers, string members, and
// arguments written as a JS object literal or strict JSON. ok is false for
// anything it cannot prove it understands; such code must go to tier 3.
func ParseLiteralCall(code string) (LiteralCall, bool) {
	p, ok := newParser(code)
	if !ok {
		return LiteralCall{}, false
	}
	var call LiteralCall
	var root string
	ok = p.statement(func() bool {
		var ok bool
		call, root, ok = p.call()
		return ok
	}, func(binding string) bool { return binding != root })
	if !ok {
		return LiteralCall{}, false
	}
	return call, true
}

// Introspection is a tier-2 read of the bridge's schema table: a property
// path under `__interfaces`, optionally wrapped in Object.keys, or a call
// of `__getToolInterface(name)`.
type Introspection struct {
	// Func is true for __getToolInterface(Name).
	Func bool
	Name string
	// Path holds the property names read below __interfaces, e.g.
	// ["exa", "web_search_exa", "input_schema"].
	Path []string
	// Keys is true for Object.keys(__interfaces…).
	Keys bool
}

// ParseIntrospection recognizes `__interfaces…`, `Object.keys(__interfaces…)`
// and `__getToolInterface("x")` in the same statement forms as
// ParseLiteralCall. ok is false for anything else.
func ParseIntrospection(code string) (Introspection, bool) {
	p, ok := newParser(code)
	if !ok {
		return Introspection{}, false
	}
	var in Introspection
	ok = p.statement(func() bool {
		var ok bool
		in, ok = p.introspection()
		return ok
	}, func(binding string) bool {
		return binding != "__interfaces" && binding != "__getToolInterface" && binding != "Object"
	})
	if !ok {
		return Introspection{}, false
	}
	return in, true
}

type parser struct {
	toks []jslit.Token
	i    int
}

func newParser(code string) (*parser, bool) {
	toks, ok := jslit.Tokenize(code)
	if !ok {
		return nil, false
	}
	return &parser{toks: toks}, true
}

func (p *parser) peek() jslit.Token { return p.toks[p.i] }

func (p *parser) next() jslit.Token {
	t := p.toks[p.i]
	if t.Kind != jslit.EOF {
		p.i++
	}
	return t
}

func (p *parser) punct(s string) bool {
	if t := p.peek(); t.Kind == jslit.Punct && t.Text == s {
		p.i++
		return true
	}
	return false
}

func (p *parser) word(s string) bool {
	if t := p.peek(); t.Kind == jslit.Ident && t.Text == s {
		p.i++
		return true
	}
	return false
}

// statement parses one of the three statement shapes around expr. okBinding
// vets the variable name of the `const r = …; return r` form, so that a
// name shadowing the receiver (a TDZ error in JS) falls through.
func (p *parser) statement(expr func() bool, okBinding func(string) bool) bool {
	switch t := p.peek(); {
	case t.Kind == jslit.Ident && (t.Text == "const" || t.Text == "let" || t.Text == "var"):
		p.next()
		name := p.next()
		if name.Kind != jslit.Ident || reserved[name.Text] || !p.punct("=") {
			return false
		}
		p.word("await")
		if !expr() || !okBinding(name.Text) {
			return false
		}
		if !p.statementEnd() {
			return false
		}
		if !p.word("return") {
			return false
		}
		if r := p.next(); r.Kind != jslit.Ident || r.Text != name.Text || r.NL {
			return false
		}
	case t.Kind == jslit.Ident && t.Text == "return":
		p.next()
		// `return` followed by a line break returns undefined (ASI).
		if p.peek().NL {
			return false
		}
		p.word("await")
		if !expr() {
			return false
		}
	default:
		p.word("await")
		if !expr() {
			return false
		}
	}
	for p.punct(";") {
	}
	return p.peek().Kind == jslit.EOF
}

// statementEnd accepts `;` or a line break before the next token, the two
// ways a statement may end before `return`.
func (p *parser) statementEnd() bool {
	if p.punct(";") {
		for p.punct(";") {
		}
		return true
	}
	return p.peek().NL
}

// member parses `.name` or `['name']`.
func (p *parser) member() (string, bool) {
	if p.punct(".") {
		t := p.next()
		return t.Text, t.Kind == jslit.Ident
	}
	if p.punct("[") {
		t := p.next()
		if t.Kind != jslit.String || !p.punct("]") {
			return "", false
		}
		var s string
		if json.Unmarshal([]byte(t.Text), &s) != nil || !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			return "", false
		}
		return s, true
	}
	return "", false
}

func (p *parser) call() (LiteralCall, string, bool) {
	var c LiteralCall
	root := p.next()
	if root.Kind != jslit.Ident || reserved[root.Text] {
		return c, "", false
	}
	c.Object = root.Text
	var ok bool
	if root.Text == "globalThis" {
		if c.Object, ok = p.member(); !ok {
			return c, "", false
		}
	}
	if c.Tool, ok = p.member(); !ok || !p.punct("(") {
		return c, "", false
	}
	if p.punct(")") {
		c.Args = json.RawMessage(`{}`)
		return c, root.Text, true
	}
	if t := p.peek(); t.Kind != jslit.Punct || t.Text != "{" {
		return c, "", false
	}
	args, next, ok := jslit.Literal(p.toks, p.i)
	if !ok {
		return c, "", false
	}
	p.i = next
	p.punct(",")
	if !p.punct(")") {
		return c, "", false
	}
	c.Args = args
	return c, root.Text, true
}

func (p *parser) introspection() (Introspection, bool) {
	var in Introspection
	switch {
	case p.word("__getToolInterface"):
		in.Func = true
		if !p.punct("(") {
			return in, false
		}
		t := p.next()
		if t.Kind != jslit.String || json.Unmarshal([]byte(t.Text), &in.Name) != nil {
			return in, false
		}
		p.punct(",")
		return in, p.punct(")")
	case p.word("Object"):
		if !p.punct(".") || !p.word("keys") || !p.punct("(") || !p.word("__interfaces") {
			return in, false
		}
		in.Keys = true
		if !p.path(&in) {
			return in, false
		}
		p.punct(",")
		return in, p.punct(")")
	case p.word("__interfaces"):
		return in, p.path(&in)
	}
	return in, false
}

func (p *parser) path(in *Introspection) bool {
	for {
		t := p.peek()
		if t.Kind != jslit.Punct || (t.Text != "." && t.Text != "[") {
			return true
		}
		name, ok := p.member()
		if !ok {
			return false
		}
		in.Path = append(in.Path, name)
	}
}

// reserved lists words that cannot name a binding or a receiver in the
// strict-mode code the sandbox may compile.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do
		else enum export extends false finally for function if import in instanceof new null return
		super switch this throw true try typeof var void while with yield let static implements
		interface package private protected public await arguments eval`) {
		reserved[w] = true
	}
}

// Answer evaluates the introspection against the backends the bridge
// preamble was built from and returns the JSON the sandbox would return.
// ok is false when the answer depends on JavaScript semantics tier 2 does
// not model (a TypeError, a string's length, an inherited property): run
// tier 3 then.
func (in Introspection) Answer(backends []bridge.Backend) (json.RawMessage, bool) {
	ifaces, ok := interfacesJSON(backends)
	if !ok {
		return nil, false
	}
	if in.Func {
		return getToolInterface(ifaces, bridge.Lookup(backends), in.Name)
	}
	v := ifaces
	for i, key := range in.Path {
		next, found, ok := member(v, key)
		if !ok {
			return nil, false
		}
		if !found {
			// A missing last key reads undefined (or an inherited method),
			// which the sandbox returns as null; anything deeper would throw.
			if i < len(in.Path)-1 || key == "__proto__" {
				return nil, false
			}
			if in.Keys {
				return nil, false
			}
			return json.RawMessage("null"), true
		}
		v = next
	}
	if in.Keys {
		return keysOf(v)
	}
	return v, true
}

// interfacesJSON renders __interfaces as the sandbox sees it: the bridge
// marshals the table with encoding/json and the preamble JSON.parses it.
func interfacesJSON(backends []bridge.Backend) (json.RawMessage, bool) {
	type iface struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	all := map[string]map[string]iface{}
	for _, b := range backends {
		if _, dup := all[b.Name]; dup {
			continue // bridge.Lookup keeps the first of duplicate names
		}
		tools := map[string]iface{}
		for _, t := range b.Tools {
			if _, dup := tools[t.Name]; dup {
				continue
			}
			schema := t.InputSchema
			if !json.Valid(schema) {
				schema = json.RawMessage("null")
			}
			tools[t.Name] = iface{t.Name, t.Description, schema}
		}
		all[b.Name] = tools
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return nil, false
	}
	out, ok := jslit.Reencode(raw)
	return out, ok
}

// getToolInterface mirrors the preamble's __getToolInterface: a dotted
// "backend.tool" split at each dot in turn (identifiers or names), then a
// bare tool name by original name and then by identifier, backends in
// sorted order; null when nothing matches.
func getToolInterface(ifaces json.RawMessage, table *bridge.Table, name string) (json.RawMessage, bool) {
	pick := func(b, t string) (json.RawMessage, bool) {
		tools, found, ok := member(ifaces, b)
		if !ok || !found {
			return nil, false
		}
		v, found, ok := member(tools, t)
		return v, ok && found
	}
	for dot := strings.IndexByte(name, '.'); dot > 0; {
		if b, t, ok := table.Resolve(name[:dot], name[dot+1:]); ok {
			return pick(b, t)
		}
		next := strings.IndexByte(name[dot+1:], '.')
		if next < 0 {
			break
		}
		dot += next + 1
	}
	names, ok := keyList(ifaces)
	if !ok {
		return nil, false
	}
	slices.Sort(names)
	for _, b := range names {
		if _, ok := table.ToolIdent(b, name); ok {
			return pick(b, name)
		}
	}
	for _, b := range names {
		if bn, t, ok := table.Resolve(b, name); ok {
			return pick(bn, t)
		}
	}
	return json.RawMessage("null"), true
}

// member reads key from a JSON object or array. ok is false when JS would
// do something this reader does not model.
func member(v json.RawMessage, key string) (_ json.RawMessage, found, ok bool) {
	switch {
	case len(v) > 0 && v[0] == '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil, false, false
		}
		next, found := m[key]
		return next, found, true
	case len(v) > 0 && v[0] == '[':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) != nil {
			return nil, false, false
		}
		if key == "length" {
			return json.RawMessage(strconv.Itoa(len(a))), true, true
		}
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || strconv.Itoa(i) != key || i >= len(a) {
			return nil, false, false
		}
		return a[i], true, true
	}
	return nil, false, false
}

// keyList returns an object's keys in document order, which jslit.Reencode
// made the JS enumeration order.
func keyList(v json.RawMessage) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil, false
		}
	}
	return keys, true
}

func keysOf(v json.RawMessage) (json.RawMessage, bool) {
	var keys []string
	switch {
	case len(v) > 0 && v[0] == '{':
		var ok bool
		if keys, ok = keyList(v); !ok {
			return nil, false
		}
	case len(v) > 0 && v[0] == '[':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) != nil {
			return nil, false
		}
		for i := range a {
			keys = append(keys, strconv.Itoa(i))
		}
	default:
		return nil, false
	}
	if keys == nil {
		keys = []string{}
	}
	raw, err := json.Marshal(keys)
	return raw, err == nil
}
