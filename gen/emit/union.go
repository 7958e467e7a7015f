package emit

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kilnmcp/kiln/gen"
)

// union derives the Go type of an anyOf/oneOf. The common Pydantic shape
// "T or null" is just a nullable T. Anything else becomes a struct wrapping
// json.RawMessage with an AsX/FromX pair per variant (the oapi-codegen
// pattern): the JSON stays exactly as sent or received, and callers pick the
// variant they expect.
func (g *typer) union(key string, variants []json.RawMessage, parent, part, fixed string, depth int) goType {
	var rest []json.RawMessage
	nullable := false
	for _, v := range variants {
		if isNullSchema(v) {
			nullable = true
			continue
		}
		rest = append(rest, v)
	}
	switch len(rest) {
	case 0:
		return rawType()
	case 1:
		t := g.typeOf(rest[0], parent, part, fixed, depth+1)
		t.nullable = t.nullable || nullable
		return t
	}
	if t := commonScalar(rest); t != "" {
		out := scalarType(t)
		out.nullable = nullable
		return out
	}

	name := fixed
	if name == "" {
		name = g.names.nestedType(parent, part)
	}
	slot := len(g.decls)
	g.decls = append(g.decls, nil)

	labels := newScope()
	var methods []jen.Code
	var shown []string
	for i, v := range rest {
		n, _ := parseNode(v)
		label := labels.claim(variantLabel(n, i))
		vt := g.typeOf(v, name, label, "", depth+1)
		shown = append(shown, label)
		methods = append(methods, unionMethods(name, label, vt)...)
	}
	doc := sentence(name+" is "+g.role("value", parent, part, fixed)+", one of "+strings.Join(shown, ", ")+" ("+key+")",
		"Set it with a From method and read it with the As methods")
	decl := []jen.Code{
		jen.Comment(doc).Line().Type().Id(name).Struct(jen.Id("raw").Add(gen.RawMessage())),
		jen.Comment("MarshalJSON writes the value last set, or null.").Line().
			Func().Params(jen.Id("u").Id(name)).Id("MarshalJSON").Params().
			Params(jen.Index().Byte(), jen.Error()).Block(
			jen.If(jen.Id("u").Dot("raw").Op("==").Nil()).Block(
				jen.Return(jen.Index().Byte().Parens(jen.Lit("null")), jen.Nil()),
			),
			jen.Return(jen.Id("u").Dot("raw"), jen.Nil()),
		),
		jen.Comment("UnmarshalJSON keeps data as the value.").Line().
			Func().Params(jen.Id("u").Op("*").Id(name)).Id("UnmarshalJSON").
			Params(jen.Id("data").Index().Byte()).Error().Block(
			jen.Id("u").Dot("raw").Op("=").Append(gen.RawMessage().Parens(jen.Nil()), jen.Id("data").Op("...")),
			jen.Return(jen.Nil()),
		),
	}
	g.decls[slot] = jen.Add(joinDecls(append(decl, methods...))...)
	return goType{code: jen.Id(name), kind: kindUnion, nullable: nullable}
}

func unionMethods(name, label string, vt goType) []jen.Code {
	return []jen.Code{
		jen.Commentf("As%s decodes the value as its %s variant.", label, label).Line().
			Func().Params(jen.Id("u").Id(name)).Id("As"+label).Params().
			Params(vt.typ(), jen.Error()).Block(
			jen.Var().Id("v").Add(vt.typ()),
			jen.Err().Op(":=").Add(gen.JSON("Unmarshal")).Call(jen.Id("u").Dot("raw"), jen.Op("&").Id("v")),
			jen.Return(jen.Id("v"), jen.Err()),
		),
		jen.Commentf("From%s sets the value to the %s variant v.", label, label).Line().
			Func().Params(jen.Id("u").Op("*").Id(name)).Id("From"+label).
			Params(jen.Id("v").Add(vt.typ())).Error().Block(
			jen.List(jen.Id("raw"), jen.Err()).Op(":=").Add(gen.JSON("Marshal")).Call(jen.Id("v")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id("u").Dot("raw").Op("=").Id("raw"),
			jen.Return(jen.Nil()),
		),
	}
}

// joinDecls separates top-level declarations with blank lines.
func joinDecls(decls []jen.Code) []jen.Code {
	out := make([]jen.Code, 0, 3*len(decls))
	for i, d := range decls {
		if i > 0 {
			out = append(out, jen.Line(), jen.Line())
		}
		out = append(out, d)
	}
	return out
}

// commonScalar returns the one scalar type every variant is, with integer
// widening to number, or "" when the variants differ in shape: anyOf
// [integer, number] is a float64, and string variants that differ only in
// format are a string.
func commonScalar(variants []json.RawMessage) string {
	seen := map[string]bool{}
	for _, v := range variants {
		n, ok := parseNode(v)
		if !ok {
			return ""
		}
		types, _ := n.types()
		if len(types) != 1 || n["properties"] != nil || n["items"] != nil || n["anyOf"] != nil || n["oneOf"] != nil || n["allOf"] != nil || n["$ref"] != nil {
			return ""
		}
		seen[types[0]] = true
	}
	switch {
	case len(seen) == 1 && (seen["string"] || seen["integer"] || seen["number"] || seen["boolean"]):
		for t := range seen {
			return t
		}
	case len(seen) == 2 && seen["integer"] && seen["number"]:
		return "number"
	}
	return ""
}

func isNullSchema(raw json.RawMessage) bool {
	n, ok := parseNode(raw)
	if !ok {
		return false
	}
	types, nullable := n.types()
	return len(types) == 0 && nullable && len(n.list("anyOf")) == 0 && len(n.list("oneOf")) == 0
}

var typeLabels = map[string]string{
	"string": "String", "integer": "Integer", "number": "Number",
	"boolean": "Boolean", "array": "Array", "object": "Object",
}

// variantLabel names a union variant after its title, its $ref target or
// its type, so methods read AsString/AsFilter rather than AsVariant2.
func variantLabel(n node, i int) string {
	if t := n.str("title"); t != "" {
		return exported(t)
	}
	if ref := n.str("$ref"); ref != "" {
		return exported(ref[strings.LastIndexAny(ref, "/#")+1:])
	}
	types, _ := n.types()
	if len(types) == 1 && typeLabels[types[0]] != "" {
		return typeLabels[types[0]]
	}
	if t := inferType(n); t != "" {
		return typeLabels[t]
	}
	return "Variant" + strconv.Itoa(i+1)
}
