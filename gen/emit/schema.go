package emit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"

	"github.com/kilnmcp/kiln/gen"
)

// maxDepth bounds how far typed structs follow nested schemas; deeper
// levels become json.RawMessage. Real schemas stay far below it, and it
// keeps a hostile manifest from producing unbounded output.
const maxDepth = 12

// maxEnumDoc caps how many enum values a doc comment lists.
const maxEnumDoc = 16

// kind is the shape of a derived Go type, which decides how an optional
// field holds it.
type kind int

const (
	kindScalar kind = iota // string, int64, float64, bool: pointer when optional
	kindSlice              // nil already means absent
	kindMap                // nil already means absent
	kindRaw                // json.RawMessage: nil already means absent
	kindStruct             // named struct: pointer when optional
	kindUnion              // named union wrapper: omitzero when optional
)

// goType is a Go type derived from a schema.
type goType struct {
	code     *jen.Statement
	kind     kind
	nullable bool   // the schema also allows null
	doc      string // what the Go type cannot say, such as enum values
}

func (t goType) typ() *jen.Statement { return t.code.Clone() }

func rawType() goType { return goType{code: gen.RawMessage(), kind: kindRaw} }

// node is one schema object, decoded leniently: backends publish schemas
// from every draft and some that follow none, so a field of the wrong shape
// is treated as absent rather than failing the build.
type node map[string]json.RawMessage

func parseNode(raw json.RawMessage) (node, bool) {
	var n node
	if json.Unmarshal(raw, &n) != nil || n == nil {
		return nil, false
	}
	return n, true
}

func (n node) str(key string) string {
	var s string
	_ = json.Unmarshal(n[key], &s)
	return s
}

func (n node) list(key string) []json.RawMessage {
	var l []json.RawMessage
	_ = json.Unmarshal(n[key], &l)
	return l
}

func (n node) strs(key string) []string {
	var out []string
	for _, r := range n.list(key) {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// types returns the non-null types a schema allows and whether it allows
// null, from "type" as a string or an array.
func (n node) types() (types []string, nullable bool) {
	ts := n.strs("type")
	if s := n.str("type"); s != "" {
		ts = []string{s}
	}
	for _, t := range ts {
		if t == "null" {
			nullable = true
		} else if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types, nullable || string(n["nullable"]) == "true"
}

// isFalse reports whether a keyword is the boolean schema false.
func (n node) isFalse(key string) bool { return string(bytes.TrimSpace(n[key])) == "false" }

// typer derives Go types for one backend package and collects the type
// declarations they need.
type typer struct {
	names *names
	tool  string // the tool whose arguments are being typed, for docs
	decls []jen.Code
}

// typeOf derives the Go type of a schema. parent and part name any type it
// must declare (parent+part, through the resolver); fixed, when set, is the
// name already claimed for it.
func (g *typer) typeOf(raw json.RawMessage, parent, part, fixed string, depth int) goType {
	n, ok := parseNode(raw)
	if !ok || depth > maxDepth {
		return rawType()
	}
	if _, ok := n["$ref"]; ok {
		return rawType()
	}
	if all := n.list("allOf"); len(all) > 0 {
		if len(all) == 1 {
			return g.typeOf(all[0], parent, part, fixed, depth+1)
		}
		return rawType()
	}
	types, nullable := n.types()
	for _, key := range []string{"anyOf", "oneOf"} {
		// A typed schema whose variants only add constraints, such as
		// {"type":"string","anyOf":[{"format":"ipv4"},{"format":"ipv6"}]},
		// is just its type.
		if vs := n.list(key); len(vs) > 0 && !(len(types) == 1 && onlyConstraints(vs)) {
			return g.union(key, vs, parent, part, fixed, depth)
		}
	}
	if len(types) > 1 {
		return rawType()
	}
	t := ""
	if len(types) == 1 {
		t = types[0]
	} else {
		t = inferType(n)
	}
	var out goType
	switch t {
	case "string", "integer", "number", "boolean":
		out = scalarType(t)
	case "array":
		out = g.array(n, parent, part, depth)
	case "object":
		out = g.object(n, parent, part, fixed, depth)
	default:
		out = rawType()
	}
	out.nullable = out.nullable || nullable
	if out.kind == kindScalar {
		out.doc = sentence(enumDoc(n), defaultDoc(n))
	}
	return out
}

func scalarType(t string) goType {
	switch t {
	case "string":
		return goType{code: jen.String(), kind: kindScalar}
	case "integer":
		return goType{code: jen.Int64(), kind: kindScalar}
	case "number":
		return goType{code: jen.Float64(), kind: kindScalar}
	case "boolean":
		return goType{code: jen.Bool(), kind: kindScalar}
	}
	return rawType()
}

// shapeKeywords are the keywords that make a schema more than a constraint
// on its parent's type.
var shapeKeywords = []string{"type", "properties", "items", "additionalProperties", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"}

func onlyConstraints(variants []json.RawMessage) bool {
	for _, v := range variants {
		n, ok := parseNode(v)
		if !ok {
			return false
		}
		for _, k := range shapeKeywords {
			if _, has := n[k]; has {
				return false
			}
		}
	}
	return true
}

// inferType guesses the type of a schema without "type" from the keywords
// it uses, as validators effectively do.
func inferType(n node) string {
	switch {
	case n["properties"] != nil:
		return "object"
	case n["items"] != nil:
		return "array"
	}
	var vals []json.RawMessage
	if c, ok := n["const"]; ok {
		vals = []json.RawMessage{c}
	} else {
		vals = n.list("enum")
	}
	if len(vals) == 0 {
		return ""
	}
	for _, v := range vals {
		if len(v) == 0 || v[0] != '"' {
			return ""
		}
	}
	return "string"
}

func (g *typer) array(n node, parent, part string, depth int) goType {
	items, ok := parseNode(n["items"])
	if !ok || len(items) == 0 {
		return goType{code: jen.Index().Add(gen.RawMessage()), kind: kindSlice}
	}
	et := g.typeOf(n["items"], parent, part+"Item", "", depth+1)
	out := goType{code: jen.Index().Add(et.typ()), kind: kindSlice}
	if et.doc != "" {
		out.doc = "Items: " + et.doc
	}
	return out
}

// object derives a struct when the schema lists properties (even none: a
// tool without arguments gets an empty struct, which encodes as {}), and a
// map for free-form objects.
func (g *typer) object(n node, parent, part, fixed string, depth int) goType {
	var props map[string]json.RawMessage
	hasProps := json.Unmarshal(n["properties"], &props) == nil && props != nil
	openEmpty := len(props) == 0 && n["additionalProperties"] != nil && !n.isFalse("additionalProperties")
	if hasProps && !openEmpty && allTaggable(props) {
		return g.structType(n, props, parent, part, fixed, depth)
	}
	elem := jen.Any()
	if ap, ok := parseNode(n["additionalProperties"]); ok && len(ap) > 0 {
		vt := g.typeOf(n["additionalProperties"], parent, part+"Value", "", depth+1)
		if vt.kind != kindRaw {
			elem = vt.typ()
		}
	}
	return goType{code: jen.Map(jen.String()).Add(elem), kind: kindMap}
}

// allTaggable reports whether every property name survives as a json struct
// tag. encoding/json ignores tags with quotes, backslashes, commas or other
// unusual characters; such an object stays a map so no property is lost.
func allTaggable(props map[string]json.RawMessage) bool {
	for k := range props {
		if !validTag(k) {
			return false
		}
	}
	return true
}

// validTag mirrors encoding/json's isValidTag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

func (g *typer) structType(n node, props map[string]json.RawMessage, parent, part, fixed string, depth int) goType {
	name := fixed
	if name == "" {
		name = g.names.nestedType(parent, part)
	}
	slot := len(g.decls)
	g.decls = append(g.decls, nil)

	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	required := map[string]bool{}
	for _, r := range n.strs("required") {
		required[r] = true
	}
	fieldIDs := fieldNames(keys)
	fields := make([]jen.Code, 0, 2*len(keys))
	for i, k := range keys {
		ft := g.typeOf(props[k], name, k, "", depth+1)
		typ, opt := fieldShape(ft, required[k])
		tag := k
		if opt != "" {
			tag += "," + opt
		}
		pn, _ := parseNode(props[k])
		if doc := sentence(docText(pn.str("description")), ft.doc); doc != "" {
			fields = append(fields, jen.Comment(doc))
		}
		fields = append(fields, jen.Id(fieldIDs[i]).Add(typ).Tag(map[string]string{"json": tag}))
	}
	doc := sentence(name+" is "+g.role("object", parent, part, fixed), docText(n.str("description")))
	g.decls[slot] = jen.Comment(doc).Line().Type().Id(name).Struct(fields...)
	return goType{code: jen.Id(name), kind: kindStruct}
}

// role says what a declared type stands for, for its doc comment.
func (g *typer) role(what, parent, part, fixed string) string {
	if fixed != "" && fixed == parent {
		return "the arguments " + what + " of tool " + quoted(g.tool)
	}
	return "the " + quoted(part) + " " + what + " of " + parent
}

// fieldShape decides how a struct holds a property: optional values become
// pointers or rely on nil, so an unset field is left out of the JSON rather
// than sent as a zero the backend would take literally.
func fieldShape(t goType, required bool) (*jen.Statement, string) {
	switch t.kind {
	case kindScalar, kindStruct:
		if required && !t.nullable {
			return t.typ(), ""
		}
		if required {
			return jen.Op("*").Add(t.typ()), ""
		}
		return jen.Op("*").Add(t.typ()), "omitempty"
	case kindUnion:
		if required {
			return t.typ(), ""
		}
		return t.typ(), "omitzero"
	default:
		if required {
			return t.typ(), ""
		}
		return t.typ(), "omitempty"
	}
}

// enumDoc lists the allowed values of an enum or const, which a plain Go
// string cannot express.
func enumDoc(n node) string {
	if c, ok := n["const"]; ok {
		return "Always " + compactJSON(c)
	}
	vals := n.list("enum")
	if len(vals) == 0 {
		return ""
	}
	shown := make([]string, 0, min(len(vals), maxEnumDoc))
	for _, v := range vals[:min(len(vals), maxEnumDoc)] {
		shown = append(shown, compactJSON(v))
	}
	s := "One of " + strings.Join(shown, ", ")
	if len(vals) > maxEnumDoc {
		s += ", … (" + strconv.Itoa(len(vals)) + " values)"
	}
	return clean(s)
}

// defaultDoc states a default, which the Go zero value cannot carry.
func defaultDoc(n node) string {
	d, ok := n["default"]
	if !ok {
		return ""
	}
	s := compactJSON(d)
	if len(s) > 80 {
		return ""
	}
	return clean("Default " + s)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
