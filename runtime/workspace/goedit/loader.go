package goedit

import (
	"errors"
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"slices"
	"strings"
)

// loader type-checks the module's packages from their source. Imports
// from outside the module are not loaded (they fail, and the checker
// goes on with their types unknown): kiln reads nothing outside the
// workspace root for an edit, and the module cache could hold anything.
type loader struct {
	m       Module
	fset    *token.FileSet
	parsed  map[string]*ast.File
	checked map[string]*types.Package // import path → library package
	infos   map[string]*types.Info
	loading map[string]bool
}

// unit is one type-checked set of files whose uses are searched.
type unit struct {
	pkg   *types.Package
	files []*ast.File
	info  *types.Info
}

func (l *loader) importPath(dir string) string {
	if dir == "." || dir == "" {
		return l.m.Path
	}
	return l.m.Path + "/" + dir
}

// dirFiles splits a folder's files: the library's, the in-package tests'
// and the external tests' (package x_test).
func (l *loader) dirFiles(dir string) (lib, inTest, extTest []*ast.File) {
	var names []string
	for name := range l.parsed {
		if path.Dir(name) == dir {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	// The folder's package is the name most of its non-test files have,
	// a //go:build ignore program not counted.
	count := map[string]int{}
	libName := ""
	for _, n := range names {
		if f := l.parsed[n]; !strings.HasSuffix(n, "_test.go") && !ignored(f) {
			count[f.Name.Name]++
			if libName == "" || count[f.Name.Name] > count[libName] {
				libName = f.Name.Name
			}
		}
	}
	for _, n := range names {
		f := l.parsed[n]
		switch {
		case !strings.HasSuffix(n, "_test.go"):
			if f.Name.Name == libName {
				lib = append(lib, f)
			}
		case strings.HasSuffix(f.Name.Name, "_test"):
			extTest = append(extTest, f)
		default:
			inTest = append(inTest, f)
		}
	}
	return lib, inTest, extTest
}

func newInfo() *types.Info {
	return &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}}
}

func (l *loader) check(importPath string, files []*ast.File) (*types.Package, *types.Info) {
	info := newInfo()
	conf := types.Config{Importer: l, Error: func(error) {}, FakeImportC: true}
	pkg, _ := conf.Check(importPath, l.fset, files, info)
	return pkg, info
}

// Import serves imports of the module's own packages from source.
func (l *loader) Import(p string) (*types.Package, error) {
	if p != l.m.Path && !strings.HasPrefix(p, l.m.Path+"/") {
		return nil, errors.New("outside the module: not loaded")
	}
	if pkg, ok := l.checked[p]; ok {
		return pkg, nil
	}
	if l.loading[p] {
		return nil, errors.New("import cycle")
	}
	dir := strings.TrimPrefix(strings.TrimPrefix(p, l.m.Path), "/")
	if dir == "" {
		dir = "."
	}
	lib, _, _ := l.dirFiles(dir)
	if len(lib) == 0 {
		return nil, errors.New("no such package in the module")
	}
	if l.loading == nil {
		l.loading = map[string]bool{}
		l.infos = map[string]*types.Info{}
	}
	l.loading[p] = true
	pkg, info := l.check(p, lib)
	delete(l.loading, p)
	l.checked[p], l.infos[p] = pkg, info
	return pkg, nil
}

// units type-checks every package of the module, with its tests.
func (l *loader) units() []unit {
	dirs := map[string]bool{}
	for name := range l.parsed {
		dirs[path.Dir(name)] = true
	}
	var out []unit
	for _, dir := range sortedKeys(dirs) {
		lib, inTest, extTest := l.dirFiles(dir)
		ip := l.importPath(dir)
		if len(lib) > 0 {
			if len(inTest) == 0 {
				if pkg, err := l.Import(ip); err == nil {
					out = append(out, unit{pkg: pkg, files: lib, info: l.infos[ip]})
				}
			} else {
				files := append(slices.Clip(lib), inTest...)
				pkg, info := l.check(ip, files)
				out = append(out, unit{pkg: pkg, files: files, info: info})
			}
		} else if len(inTest) > 0 {
			pkg, info := l.check(ip, inTest)
			out = append(out, unit{pkg: pkg, files: inTest, info: info})
		}
		if len(extTest) > 0 {
			pkg, info := l.check(ip+"_test", extTest)
			out = append(out, unit{pkg: pkg, files: extTest, info: info})
		}
		// Files of another package in the folder (a //go:build ignore
		// program, say) are searched too, each package on its own.
		others := map[string][]*ast.File{}
		for name, f := range l.parsed {
			if path.Dir(name) == dir && !slices.Contains(lib, f) && !slices.Contains(inTest, f) && !slices.Contains(extTest, f) {
				others[f.Name.Name] = append(others[f.Name.Name], f)
			}
		}
		for _, name := range sortedKeys(others) {
			pkg, info := l.check(ip+"#"+name, others[name])
			out = append(out, unit{pkg: pkg, files: others[name], info: info})
		}
	}
	return out
}

// sigText is a signature's text with packages named by path, comparable
// across type-checks of the same code.
func sigText(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string { return p.Path() })
}

// targetMethods are the method signatures of the target's receiver type
// (value and pointer receivers).
func (l *loader) targetMethods(t sigTarget) map[string]string {
	pkg, err := l.Import(t.pkg)
	if err != nil || pkg == nil {
		return nil
	}
	tn, ok := pkg.Scope().Lookup(t.recv).(*types.TypeName)
	if !ok {
		return nil
	}
	ms := types.NewMethodSet(types.NewPointer(tn.Type()))
	out := map[string]string{}
	for i := range ms.Len() {
		out[ms.At(i).Obj().Name()] = sigText(ms.At(i).Obj().Type())
	}
	return out
}

// satisfies reports whether methods (name → signature) cover iface and
// iface has the target's method.
func satisfies(methods map[string]string, iface *types.Interface, name string) bool {
	has := false
	for i := range iface.NumMethods() {
		m := iface.Method(i)
		if methods[m.Name()] != sigText(m.Type()) {
			return false
		}
		has = has || m.Name() == name
	}
	return has
}

type ifaceAt struct {
	name string
	pos  token.Pos
}

// interfacesWith lists the named interfaces of u's package that the
// target's receiver type satisfies and that hold the target method.
func (l *loader) interfacesWith(u unit, t sigTarget) []ifaceAt {
	methods := l.targetMethods(t)
	if u.pkg == nil || methods == nil {
		return nil
	}
	var out []ifaceAt
	for _, name := range u.pkg.Scope().Names() {
		tn, ok := u.pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if iface, ok := tn.Type().Underlying().(*types.Interface); ok && satisfies(methods, iface, t.name) {
			out = append(out, ifaceAt{name: name, pos: tn.Pos()})
		}
	}
	return out
}

// implementedBy reports whether fn, a method of an interface (named or
// not), is one the target's receiver type satisfies.
func (l *loader) implementedBy(fn *types.Func, t sigTarget) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	iface, ok := sig.Recv().Type().Underlying().(*types.Interface)
	if !ok {
		return false
	}
	return satisfies(l.targetMethods(t), iface, t.name)
}

// ignored reports a file whose build constraint is //go:build ignore.
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.TrimSpace(strings.TrimPrefix(c.Text, "//go:build")) == "ignore" && strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}
