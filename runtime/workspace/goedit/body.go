package goedit

import (
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// Error is a refusal written for a model: what is wrong and what to do.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func refuse(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// IsRefusal reports whether err is one of this package's refusals (as
// opposed to a failure reading or writing).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// parseFile parses src with comments, refusing a file that does not parse:
// an edit of a broken file would have to guess where declarations end.
func parseFile(fset *token.FileSet, name string, src []byte) (*ast.File, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, refuse("%s does not parse as Go (%v); fix it with Edit first", name, firstErr(err))
	}
	return f, nil
}

func firstErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, " (and "); i > 0 {
		return s[:i]
	}
	return s
}

// recvName is the receiver's type name of a method (T for t T, *T, T[K]).
func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// funcName is how a model names fd: Name, or Type.Method.
func funcName(fd *ast.FuncDecl) string {
	if r := recvName(fd); r != "" {
		return r + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// findFunc finds the declaration name ("Name" or "Type.Method") in f.
func findFunc(f *ast.File, file, name string) (*ast.FuncDecl, error) {
	var found []*ast.FuncDecl
	var all []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		all = append(all, funcName(fd))
		if funcName(fd) == name {
			found = append(found, fd)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		// init may be declared many times.
		return nil, refuse("%s declares %s %d times; edit it with Edit", file, name, len(found))
	}
	if len(all) == 0 {
		return nil, refuse("%s declares no functions; name a function as Name or a method as Type.Method in a file that declares it", file)
	}
	return nil, refuse("%s declares no function %s; it declares %s (methods are named Type.Method)", file, name, strings.Join(all, ", "))
}

// gofmt formats src, refusing when the result does not parse: the edit
// would leave a broken file.
func gofmt(name string, src []byte) ([]byte, error) {
	out, err := format.Source(src)
	if err != nil {
		return nil, refuse("the edited %s would not parse (%v); nothing was written; check the code you gave", name, firstErr(err))
	}
	return out, nil
}

// EditBody replaces the body of function (Name or Type.Method) in src with
// newBody: the statements between the braces, or a whole { … } block.
// Everything outside the braces is kept byte for byte before gofmt runs.
func EditBody(name string, src []byte, function, newBody string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parseFile(fset, name, src)
	if err != nil {
		return nil, err
	}
	fd, err := findFunc(f, name, function)
	if err != nil {
		return nil, err
	}
	if fd.Body == nil {
		return nil, refuse("%s in %s has no body (it is implemented outside Go); nothing to replace", function, name)
	}
	body := strings.TrimSpace(newBody)
	if strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}") && blockParses(body) {
		body = strings.TrimSpace(body[1 : len(body)-1])
	}
	if err := checkBody(body); err != nil {
		return nil, err
	}
	tf := fset.File(f.Pos())
	lb, rb := tf.Offset(fd.Body.Lbrace), tf.Offset(fd.Body.Rbrace)
	var b strings.Builder
	b.Write(src[:lb+1])
	b.WriteString("\n")
	b.WriteString(body)
	b.WriteString("\n")
	b.Write(src[rb:])
	return gofmt(name, []byte(b.String()))
}

// blockParses reports whether s (starting with { and ending with }) is one
// block, not "{ a } … { b }".
func blockParses(s string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() "+s+"\n", 0)
	return err == nil
}

// checkBody parses body as the statements of a function, reporting errors
// at lines of new_body.
func checkBody(body string) error {
	const head = "package p\nfunc _() {\n"
	f, err := parser.ParseFile(token.NewFileSet(), "new_body", head+body+"\n}\n", parser.ParseComments)
	if err != nil {
		return refuse("new_body does not parse as Go statements (%s); nothing was written", shiftLines(err, 2))
	}
	if len(f.Decls) != 1 {
		// "}\nfunc X() {" would close the body and declare more.
		return refuse("new_body closes the function's body and goes on past it; give only the statements inside the braces (add declarations with insert_after_method); nothing was written")
	}
	return nil
}

// shiftLines rewrites "name:L:C: msg" so L counts from the start of the
// text the model gave, not of the wrapper around it.
func shiftLines(err error, by int) string {
	msg := firstErr(err)
	var line, col int
	if i := strings.Index(msg, ": "); i > 0 {
		head := msg[:i]
		parts := strings.Split(head, ":")
		if len(parts) == 3 {
			if _, e := fmt.Sscanf(parts[1]+" "+parts[2], "%d %d", &line, &col); e == nil {
				return fmt.Sprintf("%s line %d, column %d: %s", parts[0], max(1, line-by), col, msg[i+2:])
			}
		}
	}
	return msg
}

// InsertAfter inserts code (one or more declarations) after method
// typ.method in src, or, with method "", after the last method of typ
// declared in src (after the type's declaration when src has none).
func InsertAfter(name string, src []byte, typ, method, code string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parseFile(fset, name, src)
	if err != nil {
		return nil, err
	}
	code = strings.TrimSpace(code)
	if code == "" {
		return nil, refuse("code is empty; give the declarations to insert, e.g. func (t *T) Name() string { return t.name }")
	}
	cf, err := parser.ParseFile(token.NewFileSet(), "code", "package p\n"+code+"\n", parser.ParseComments)
	if err != nil {
		return nil, refuse("code does not parse as Go declarations (%s); nothing was written; give whole declarations (func, type, var, const), no package clause or imports", shiftLines(err, 1))
	}
	if len(cf.Decls) == 0 {
		return nil, refuse("code holds no declarations; give whole declarations (func, type, var, const)")
	}
	for _, d := range cf.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			return nil, refuse("code holds an import; insert_after_method inserts declarations only: add the import with Edit")
		}
	}
	var after ast.Decl
	var methods []string
	for _, d := range f.Decls {
		switch x := d.(type) {
		case *ast.FuncDecl:
			if recvName(x) != typ {
				continue
			}
			methods = append(methods, x.Name.Name)
			if method == "" || x.Name.Name == method {
				after = x
			}
		case *ast.GenDecl:
			if method != "" || x.Tok != token.TYPE || after != nil {
				continue
			}
			if slices.ContainsFunc(x.Specs, func(s ast.Spec) bool { return s.(*ast.TypeSpec).Name.Name == typ }) {
				after = x
			}
		}
	}
	if method != "" && (after == nil || after.(*ast.FuncDecl).Name.Name != method) {
		if len(methods) == 0 {
			return nil, refuse("%s declares no methods of %s; give the file that declares them, or leave method out to insert after the type", name, typ)
		}
		return nil, refuse("%s declares no method %s.%s; its methods of %s are %s", name, typ, method, typ, strings.Join(methods, ", "))
	}
	if after == nil {
		return nil, refuse("%s declares neither type %s nor methods of it; give the file that does", name, typ)
	}
	tf := fset.File(f.Pos())
	end := tf.Offset(after.End())
	// A comment on the declaration's last line stays with it.
	for _, cg := range f.Comments {
		if cg.Pos() >= after.End() && tf.Line(cg.Pos()) == tf.Line(after.End()) {
			end = tf.Offset(cg.End())
		}
	}
	var b strings.Builder
	b.Write(src[:end])
	b.WriteString("\n\n")
	b.WriteString(code)
	b.WriteString("\n")
	b.Write(src[end:])
	out, err := gofmt(name, []byte(b.String()))
	if err != nil {
		return nil, err
	}
	// A name the file already declares would not compile; say which.
	if of, perr := parser.ParseFile(token.NewFileSet(), name, out, 0); perr == nil {
		if dup := duplicate(of); dup != "" {
			return nil, refuse("after the insertion %s declares %s twice; nothing was written; pick another name", name, dup)
		}
	}
	return out, nil
}

// duplicate names a function or method declared twice in f, or "".
func duplicate(f *ast.File) string {
	seen := map[string]bool{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			n := funcName(fd)
			if n == "init" || n == "_" {
				continue
			}
			if seen[n] {
				return n
			}
			seen[n] = true
		}
	}
	return ""
}
