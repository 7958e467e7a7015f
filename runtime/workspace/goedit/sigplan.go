package goedit

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"slices"
	"strings"

	"github.com/dave/dst"
)

// oldParam is one parameter of the declaration as it is.
type oldParam struct {
	name string
	typ  ast.Expr
}

// oldParams flattens the declaration's parameters (a, b int is two),
// refusing shapes whose call sites cannot be mapped argument by argument.
func oldParams(fd *ast.FuncDecl, function string) ([]oldParam, error) {
	var out []oldParam
	for _, f := range fd.Type.Params.List {
		if _, ok := f.Type.(*ast.Ellipsis); ok {
			return nil, refuse("%s is variadic; change_function_signature does not rewrite variadic calls yet: use Edit", function)
		}
		if len(f.Names) == 0 {
			return nil, refuse("%s has unnamed parameters; name them first (edit the signature with Edit), then change it here by name", function)
		}
		for _, n := range f.Names {
			if n.Name == "_" {
				return nil, refuse("%s has a parameter named _; name it first with Edit, then change it here by name", function)
			}
			out = append(out, oldParam{name: n.Name, typ: f.Type})
		}
	}
	return out, nil
}

// sigPlan is the new parameter list: for each new parameter, the index of
// the old one it keeps, or -1 with the default expression.
type sigPlan struct {
	from     []int
	params   []Param
	defaults []string
	old      []oldParam
}

func planParams(old []oldParam, params []Param, function string) (*sigPlan, error) {
	p := &sigPlan{old: old, params: params}
	seen := map[string]bool{}
	var names []string
	for _, o := range old {
		names = append(names, o.name)
	}
	for _, np := range params {
		if !token.IsIdentifier(np.Name) || np.Name == "_" {
			return nil, refuse("parameter name %q is not a Go identifier", np.Name)
		}
		if seen[np.Name] {
			return nil, refuse("parameter %s is listed twice", np.Name)
		}
		seen[np.Name] = true
		if np.Type != "" {
			if strings.HasPrefix(strings.TrimSpace(np.Type), "...") {
				return nil, refuse("parameter %s: variadic parameters are not supported yet; use Edit", np.Name)
			}
			if !isType(np.Type) {
				return nil, refuse("type %q of parameter %s is not a Go type", np.Type, np.Name)
			}
		}
		i := slices.IndexFunc(old, func(o oldParam) bool { return o.name == np.Name })
		if i < 0 {
			if np.Type == "" || np.Default == "" {
				return nil, refuse("parameter %s is new (%s has %s), so it needs type and default_value, the expression every existing call passes for it", np.Name, function, strings.Join(names, ", "))
			}
			if _, err := parser.ParseExpr(np.Default); err != nil {
				return nil, refuse("default_value %q of parameter %s is not a Go expression (%v)", np.Default, np.Name, firstErr(err))
			}
		} else if np.Default != "" {
			return nil, refuse("parameter %s exists already, so default_value does not apply (call sites keep their argument); leave it out, or give a new name", np.Name)
		}
		p.from = append(p.from, i)
		p.defaults = append(p.defaults, np.Default)
	}
	return p, nil
}

// rewriteArgs builds a call's new argument list from its old one and says
// which old arguments were dropped.
func (p *sigPlan) rewriteArgs(args []dst.Expr) ([]dst.Expr, []int) {
	var out []dst.Expr
	used := map[int]bool{}
	// A call written one argument a line stays so.
	multiline := len(args) > 0 && args[len(args)-1].Decorations().After == dst.NewLine
	for k, i := range p.from {
		if i >= 0 {
			out = append(out, args[i])
			used[i] = true
			continue
		}
		// The expression is printed as written: gofmt re-reads it.
		id := &dst.Ident{Name: strings.TrimSpace(p.defaults[k])}
		if multiline {
			id.Decs.Before = dst.NewLine
		}
		out = append(out, id)
	}
	if multiline && len(out) > 0 {
		for _, a := range out {
			if a.Decorations().After == dst.NewLine {
				a.Decorations().After = dst.None
			}
		}
		out[len(out)-1].Decorations().After = dst.NewLine
	}
	var dropped []int
	for i := range args {
		if !used[i] {
			dropped = append(dropped, i)
		}
	}
	return out, dropped
}

// rewriteDecl gives fd its new parameter list (and results).
func (p *sigPlan) rewriteDecl(fd *dst.FuncDecl, results *string) error {
	var oldTypes []dst.Expr
	for _, f := range fd.Type.Params.List {
		for range f.Names {
			oldTypes = append(oldTypes, f.Type)
		}
	}
	var list []*dst.Field
	for k, i := range p.from {
		np := p.params[k]
		var typ dst.Expr
		switch {
		case np.Type != "":
			typ = &dst.Ident{Name: strings.TrimSpace(np.Type)}
		default:
			typ = dst.Clone(oldTypes[i]).(dst.Expr)
		}
		list = append(list, &dst.Field{Names: []*dst.Ident{{Name: np.Name}}, Type: typ})
	}
	fd.Type.Params.List = list
	if results != nil {
		r := strings.TrimSpace(*results)
		if r == "" {
			fd.Type.Results = nil
		} else {
			fd.Type.Results = &dst.FieldList{List: []*dst.Field{{Type: &dst.Ident{Name: r}}}}
		}
	}
	return nil
}

func printNode(w io.Writer, fset *token.FileSet, n ast.Node) error {
	return printer.Fprint(w, fset, n)
}

// isType reports whether t is one Go type and nothing more: as the only
// parameter's type of a function without results.
func isType(t string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _(x "+t+")\n", 0)
	if err != nil || len(f.Decls) != 1 {
		return false
	}
	fd, ok := f.Decls[0].(*ast.FuncDecl)
	return ok && fd.Type.Results == nil && len(fd.Type.Params.List) == 1 && len(fd.Type.Params.List[0].Names) == 1
}
