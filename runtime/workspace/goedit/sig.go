package goedit

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/dave/dst"
	"github.com/dave/dst/decorator"
)

// Module is a Go module's source, as the workspace read it: its module
// path and every .go file, keyed by the path relative to the module's
// folder (slash-separated).
type Module struct {
	Path  string
	Files map[string][]byte
}

// Param is one parameter of the new signature, in order. A Name that the
// function has already keeps that parameter (Type, when set, retypes it);
// a new Name needs Type and Default, the expression every existing call
// site passes for it.
type Param struct {
	Name, Type, Default string
}

// SigChange is change_function_signature's request.
type SigChange struct {
	File     string // relative to the module's folder
	Function string // Name or Type.Method
	Params   []Param
	// Results, when not nil, replaces the result list ("" for none);
	// call sites are not changed for it.
	Results *string
}

// SigReport says what ChangeSignature did, for the answer.
type SigReport struct {
	// Calls are the call sites rewritten, as file:line.
	Calls []string
	// Dropped are the arguments removed with their parameters, as
	// file:line: text.
	Dropped []string
}

// sigTarget identifies the function across type-checks of the same
// package (with and without its test files): objects differ, keys do not.
type sigTarget struct {
	pkg, recv, name string
}

func keyOf(f *types.Func) sigTarget {
	f = f.Origin()
	k := sigTarget{name: f.Name()}
	if f.Pkg() != nil {
		k.pkg = f.Pkg().Path()
	}
	if sig, ok := f.Type().(*types.Signature); ok && sig.Recv() != nil {
		t := sig.Recv().Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			k.recv = n.Obj().Name()
		} else {
			k.recv = "(interface)"
		}
	}
	return k
}

// ChangeSignature changes the parameters (and results) of one function or
// method and rewrites every call of it in the module. It returns the new
// text of each file it changed. It refuses, changing nothing, when a use
// cannot be rewritten (the function used as a value, a call through an
// interface, a call spreading a multi-value result) or cannot be told
// apart from another function (a call whose receiver's type comes from
// outside the module, which is not loaded).
func ChangeSignature(m Module, c SigChange) (map[string][]byte, SigReport, error) {
	var rep SigReport
	if !strings.HasSuffix(c.File, ".go") {
		return nil, rep, refuse("%s is not a .go file", c.File)
	}
	if _, ok := m.Files[c.File]; !ok {
		return nil, rep, refuse("%s is not a Go file of module %s", c.File, m.Path)
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	var broken []string
	for _, name := range sortedKeys(m.Files) {
		f, err := parser.ParseFile(fset, name, m.Files[name], parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			broken = append(broken, name+" ("+firstErr(err)+")")
			continue
		}
		parsed[name] = f
	}
	if len(broken) > 0 {
		return nil, rep, refuse("these files of the module do not parse, so calls in them could be missed; fix them first: %s", strings.Join(broken, "; "))
	}
	decl, err := findFunc(parsed[c.File], c.File, c.Function)
	if err != nil {
		return nil, rep, err
	}
	// Build-tagged variants (f_linux.go, f_windows.go) each declare it;
	// only one would change.
	for _, name := range sortedKeys(parsed) {
		f := parsed[name]
		if name == c.File || path.Dir(name) != path.Dir(c.File) || f.Name.Name != parsed[c.File].Name.Name {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && funcName(fd) == c.Function {
				return nil, rep, refuse("%s is declared in %s too (build-tagged variants); change_function_signature changes one declaration: change each variant by hand", c.Function, name)
			}
		}
	}
	old, err := oldParams(decl, c.Function)
	if err != nil {
		return nil, rep, err
	}
	plan, err := planParams(old, c.Params, c.Function)
	if err != nil {
		return nil, rep, err
	}
	if c.Results != nil {
		if r := strings.TrimSpace(*c.Results); r != "" {
			if f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() "+r+"\n", 0); err != nil || len(f.Decls) != 1 || f.Decls[0].(*ast.FuncDecl).Body != nil {
				return nil, rep, refuse("results %q is not a Go result list (write e.g. error or (int, error)); nothing was written", r)
			}
		}
	}
	l := &loader{m: m, fset: fset, parsed: parsed, checked: map[string]*types.Package{}}
	units := l.units()
	target := sigTarget{pkg: l.importPath(path.Dir(c.File)), recv: recvName(decl), name: decl.Name.Name}
	if strings.HasSuffix(c.File, "_test.go") && strings.HasSuffix(parsed[c.File].Name.Name, "_test") {
		target.pkg += "_test" // an external test package, as units checks it
	}

	// Every use of the target, and every use that might be it.
	type call struct {
		file string
		off  int // of the CallExpr
		line int
	}
	calls := map[call]bool{}
	var problems []string
	add := func(p token.Pos, msg string) {
		pos := fset.Position(p)
		s := fmt.Sprintf("%s:%d: %s", pos.Filename, pos.Line, msg)
		if !slices.Contains(problems, s) {
			problems = append(problems, s)
		}
	}
	for _, u := range units {
		for _, f := range u.files {
			parents := parentMap(f)
			ast.Inspect(f, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok || id.Name != target.name || id.Pos() == decl.Name.Pos() {
					return true
				}
				obj := u.info.Uses[id]
				fn, isFunc := obj.(*types.Func)
				if obj == nil {
					if u.info.Defs[id] != nil {
						return true
					}
					// A selector on a value whose type is unknown (from
					// outside the module) or a name that did not resolve.
					if sel, ok := parents[id].(*ast.SelectorExpr); ok && sel.Sel == id {
						if target.recv != "" || isPkgSelector(sel, u.info) {
							add(id.Pos(), "cannot tell whether "+exprText(fset, sel)+" is "+c.Function+" (its receiver's type is not known without loading code outside the module)")
						}
					} else if target.recv == "" {
						add(id.Pos(), "cannot tell whether "+id.Name+" is "+c.Function+" (the name did not resolve)")
					}
					return true
				}
				if !isFunc || keyOf(fn) != target {
					if isFunc && target.recv != "" && keyOf(fn).recv == "(interface)" && l.implementedBy(fn, target) {
						add(id.Pos(), "calls "+c.Function+" through an interface method ("+types.ObjectString(fn, nil)+"); change the interface and its implementations together by hand")
					}
					return true
				}
				var expr ast.Node = id
				if sel, ok := parents[id].(*ast.SelectorExpr); ok && sel.Sel == id {
					if s := u.info.Selections[sel]; s != nil && s.Kind() == types.MethodExpr {
						add(id.Pos(), "uses "+c.Function+" as a method expression ("+exprText(fset, sel)+"), whose receiver is an argument; change that use by hand first")
						return true
					}
					expr = sel
				}
				// An explicit instantiation, F[int](x), is called as F.
				switch p := parents[expr].(type) {
				case *ast.IndexExpr:
					if p.X == expr {
						expr = p
					}
				case *ast.IndexListExpr:
					if p.X == expr {
						expr = p
					}
				}
				ce, ok := parents[expr].(*ast.CallExpr)
				if !ok || ce.Fun != expr {
					add(id.Pos(), "uses "+c.Function+" as a value, not in a call, so its arguments cannot be rewritten; change that use by hand first")
					return true
				}
				if len(ce.Args) != len(old) || ce.Ellipsis.IsValid() {
					add(ce.Pos(), fmt.Sprintf("calls %s with %d argument(s) for %d parameter(s) (a multi-value call or a spread), which cannot be split", c.Function, len(ce.Args), len(old)))
					return true
				}
				pos := fset.Position(ce.Pos())
				calls[call{pos.Filename, pos.Offset, pos.Line}] = true
				return true
			})
		}
		if target.recv != "" {
			for _, iface := range l.interfacesWith(u, target) {
				add(iface.pos, "interface "+iface.name+" has a method "+target.name+" that "+target.recv+" implements; callers through it would break: change the interface and every implementation together (Edit), or give the method a new name with rename_symbol first")
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, rep, refuse("change_function_signature refused, nothing was written: %s", strings.Join(problems, "; "))
	}

	// Rewrite: the declaration, then the calls, file by file with dst.
	byFile := map[string][]call{}
	for k := range calls {
		byFile[k.file] = append(byFile[k.file], k)
	}
	byFile[c.File] = append(byFile[c.File], call{})
	out := map[string][]byte{}
	for _, name := range sortedKeys(byFile) {
		wfset := token.NewFileSet()
		af, err := parser.ParseFile(wfset, name, m.Files[name], parser.ParseComments)
		if err != nil {
			return nil, rep, fmt.Errorf("reparse %s: %w", name, err)
		}
		d := decorator.NewDecorator(wfset)
		df, err := d.DecorateFile(af)
		if err != nil {
			return nil, rep, fmt.Errorf("decorate %s: %w", name, err)
		}
		want := map[int]int{}
		for _, k := range byFile[name] {
			if k.line > 0 {
				want[k.off] = k.line
			}
		}
		var failed error
		ast.Inspect(af, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				line, ok := want[wfset.Position(x.Pos()).Offset]
				if !ok {
					return true
				}
				dc := d.Dst.Nodes[x].(*dst.CallExpr)
				args, dropped := plan.rewriteArgs(dc.Args)
				dc.Args = args
				for _, a := range dropped {
					rep.Dropped = append(rep.Dropped, fmt.Sprintf("%s:%d: %s", name, line, exprText(wfset, x.Args[a])))
				}
				rep.Calls = append(rep.Calls, fmt.Sprintf("%s:%d", name, line))
			case *ast.FuncDecl:
				if name == c.File && x.Name.Name == decl.Name.Name && recvName(x) == target.recv {
					if err := plan.rewriteDecl(d.Dst.Nodes[x].(*dst.FuncDecl), c.Results); err != nil {
						failed = err
					}
				}
			}
			return true
		})
		if failed != nil {
			return nil, rep, failed
		}
		var buf bytes.Buffer
		if err := decorator.NewRestorer().Fprint(&buf, df); err != nil {
			return nil, rep, refuse("rewriting %s failed (%v); nothing was written", name, err)
		}
		formatted, err := gofmt(name, buf.Bytes())
		if err != nil {
			return nil, rep, err
		}
		out[name] = formatted
	}
	slices.Sort(rep.Calls)
	return out, rep, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// isPkgSelector reports whether sel is pkg.Name with pkg an import (a
// package-level function of another package may be the target).
func isPkgSelector(sel *ast.SelectorExpr, info *types.Info) bool {
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	_, isPkg := info.Uses[id].(*types.PkgName)
	return isPkg
}

func exprText(fset *token.FileSet, n ast.Node) string {
	var b strings.Builder
	if err := printNode(&b, fset, n); err != nil {
		return "?"
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func parentMap(f *ast.File) map[ast.Node]ast.Node {
	parents := map[ast.Node]ast.Node{}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		if len(stack) > 0 {
			parents[n] = stack[len(stack)-1]
		}
		stack = append(stack, n)
		return true
	})
	return parents
}
