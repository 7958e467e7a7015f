package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

const astSrc = "package m\n\n// Hello greets.\nfunc Hello() string {\n\treturn \"bye\" // wrong\n}\n\n// T is a thing.\ntype T struct{}\n\n// A is first.\nfunc (T) A() int { return 1 }\n\n// B is second.\nfunc (T) B() int { return 2 }\n"

func (f *fixture) read(rel string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// TestEditFunctionBody: each field changes what is edited, the answer
// holds a diff, and a body that does not parse writes nothing.
func TestEditFunctionBody(t *testing.T) {
	f := newFixture(t, nil)
	f.write("m.go", astSrc)
	got := f.expectOK("edit_function_body", map[string]any{"file_path": "m.go", "function": "Hello", "new_body": "return \"hello\" // right"})
	if !strings.Contains(got, "-\treturn \"bye\" // wrong\n+\treturn \"hello\" // right\n") || !strings.Contains(got, "--- m.go") {
		t.Errorf("answer lacks the diff:\n%s", got)
	}
	if want := strings.Replace(astSrc, "return \"bye\" // wrong", "return \"hello\" // right", 1); f.read("m.go") != want {
		t.Errorf("m.go =\n%s", f.read("m.go"))
	}
	// function picks the declaration: a method by Type.Method.
	f.expectOK("edit_function_body", map[string]any{"file_path": "m.go", "function": "T.B", "new_body": "return 3"})
	if s := f.read("m.go"); !strings.Contains(s, "func (T) B() int {\n\treturn 3\n}") || !strings.Contains(s, "func (T) A() int { return 1 }") {
		t.Errorf("T.B edit:\n%s", s)
	}
	// file_path picks the file.
	f.write("n.go", "package m\n\nfunc Hello2() {}\n")
	f.expectErr("edit_function_body", map[string]any{"file_path": "n.go", "function": "Hello", "new_body": "return"}, "declares no function Hello; it declares Hello2")

	before := f.read("m.go")
	f.expectErr("edit_function_body", map[string]any{"file_path": "m.go", "function": "Hello", "new_body": "return \"x\" +"}, "new_body does not parse")
	if f.read("m.go") != before {
		t.Error("a body that does not parse changed the file")
	}
	f.expectErr("edit_function_body", map[string]any{"file_path": "../outside/x.go", "function": "F", "new_body": ""}, "outside the workspace root")
	for file, lang := range map[string]string{"a.ts": "TypeScript/JavaScript", "a.py": "Python"} {
		f.write(file, "x\n")
		got := f.expectErr("edit_function_body", map[string]any{"file_path": file, "function": "f", "new_body": "x"}, "not supported for "+lang+" yet")
		if !strings.Contains(got, "use Edit") || !strings.Contains(got, "rename_symbol") {
			t.Errorf("unsupported language refusal = %s", got)
		}
	}
}

// TestInsertAfterMethod: method names where the code goes, and without it
// the code goes after the type's last method.
func TestInsertAfterMethod(t *testing.T) {
	f := newFixture(t, nil)
	f.write("m.go", astSrc)
	got := f.expectOK("insert_after_method", map[string]any{"file_path": "m.go", "type": "T", "method": "A", "code": "// C is new.\nfunc (T) C() int { return 3 }"})
	if !strings.Contains(got, "+// C is new.") {
		t.Errorf("answer lacks the diff:\n%s", got)
	}
	s := f.read("m.go")
	if !strings.Contains(s, "func (T) A() int { return 1 }\n\n// C is new.\nfunc (T) C() int { return 3 }\n\n// B is second.") {
		t.Errorf("after A:\n%s", s)
	}
	f.expectOK("insert_after_method", map[string]any{"file_path": "m.go", "type": "T", "code": "func (T) D() {}"})
	if s := f.read("m.go"); !strings.HasSuffix(s, "func (T) B() int { return 2 }\n\nfunc (T) D() {}\n") {
		t.Errorf("after the last method:\n%s", s)
	}
	before := f.read("m.go")
	f.expectErr("insert_after_method", map[string]any{"file_path": "m.go", "type": "U", "code": "func F() {}"}, "declares neither type U")
	f.expectErr("insert_after_method", map[string]any{"file_path": "m.go", "type": "T", "code": "func F( {}"}, "code does not parse")
	if f.read("m.go") != before {
		t.Error("a refused insertion changed the file")
	}
	f.write("a.py", "x\n")
	f.expectErr("insert_after_method", map[string]any{"file_path": "a.py", "type": "T", "code": "def f(): pass"}, "not supported for Python yet")
}

// TestChangeFunctionSignature: through the workspace, a change reaches
// every package of the module, the module still builds (run_typecheck,
// confined go build), and a refusal writes nothing.
func TestChangeFunctionSignature(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Timeout, c.Bash.MaxTimeout = 3*time.Minute, 3*time.Minute })
	f.write("go.mod", "module example.com/m\n\ngo 1.22\n")
	f.write("lib/lib.go", "package lib\n\n// Greet greets.\nfunc Greet(name string, loud bool) string {\n\tif loud {\n\t\treturn name + \"!\"\n\t}\n\treturn name\n}\n")
	f.write("cmd/main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { println(lib.Greet(\"a\", true)) }\n")
	f.write("nested/go.mod", "module example.com/other\n\ngo 1.22\n")
	f.write("nested/x.go", "package x\n\nfunc Greet(a, b int) {}\n\nfunc y() { Greet(1, 2) }\n")
	got := f.expectOK("change_function_signature", map[string]any{"file_path": "lib/lib.go", "function": "Greet",
		"params": []map[string]any{{"name": "loud"}, {"name": "name"}, {"name": "times", "type": "int", "default_value": "1"}}})
	for _, want := range []string{"1 call site(s) in 2 file(s): cmd/main.go:5", "+func main() { println(lib.Greet(true, \"a\", 1)) }", "+func Greet(loud bool, name string, times int) string {"} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %q:\n%s", want, got)
		}
	}
	if s := f.read("nested/x.go"); !strings.Contains(s, "Greet(1, 2)") {
		t.Errorf("a nested module was changed:\n%s", s)
	}
	f.expectOK("run_typecheck", map[string]any{})
	// results changes the result list.
	got = f.expectOK("change_function_signature", map[string]any{"file_path": "lib/lib.go", "function": "Greet",
		"params": []map[string]any{{"name": "loud"}, {"name": "name"}, {"name": "times"}}, "results": "(string)"})
	if !strings.Contains(got, "run_typecheck shows the ones to fix") || !strings.Contains(f.read("lib/lib.go"), "times int) string {") {
		t.Errorf("results: %s\n%s", got, f.read("lib/lib.go"))
	}
	before := f.read("cmd/main.go")
	f.write("cmd/v.go", "package main\n\nimport \"example.com/m/lib\"\n\nvar g = lib.Greet\n")
	f.expectErr("change_function_signature", map[string]any{"file_path": "lib/lib.go", "function": "Greet", "params": []map[string]any{{"name": "name"}}}, "cmd/v.go:5: uses Greet as a value")
	if f.read("cmd/main.go") != before || !strings.Contains(f.read("lib/lib.go"), "loud bool") {
		t.Error("a refused change wrote files")
	}
	f.expectErr("change_function_signature", map[string]any{"file_path": "lib/lib.go", "function": "Greet", "params": []map[string]any{{"name": "name", "typo": 1}}}, "params must be a list")
	f.write("a.ts", "export function f() {}\n")
	f.expectErr("change_function_signature", map[string]any{"file_path": "a.ts", "function": "f", "params": []map[string]any{}}, "not supported for TypeScript/JavaScript yet")
}

// TestStructuralEditsStayInside: a .go file that is a symlink leading
// outside the root is neither read for call sites nor edited, and the
// planted secret never comes back.
func TestStructuralEditsStayInside(t *testing.T) {
	f := newFixture(t, nil)
	evil := filepath.Join(f.outside, "evil.go")
	if err := os.WriteFile(evil, []byte("package lib\n\n// "+secretText+"\nfunc Evil() { Greet(\"x\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.write("go.mod", "module example.com/m\n\ngo 1.22\n")
	f.write("lib/lib.go", "package lib\n\nfunc Greet(name string) string { return name }\n")
	if err := os.Symlink(evil, filepath.Join(f.root, "lib", "evil.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.root, "outdir")); err != nil {
		t.Fatal(err)
	}
	got := f.expectOK("change_function_signature", map[string]any{"file_path": "lib/lib.go", "function": "Greet",
		"params": []map[string]any{{"name": "name"}, {"name": "n", "type": "int", "default_value": "1"}}})
	if strings.Contains(got, secretText) || !strings.Contains(got, "0 call site(s) in 1 file(s)") {
		t.Errorf("change through a symlink outside:\n%s", got)
	}
	if data, _ := os.ReadFile(evil); !strings.Contains(string(data), "Greet(\"x\") }") {
		t.Errorf("the file outside was changed:\n%s", data)
	}
	for _, p := range []string{"lib/evil.go", "outdir/evil.go"} {
		if got := f.expectErr("edit_function_body", map[string]any{"file_path": p, "function": "Evil", "new_body": ""}, "outside the workspace root"); strings.Contains(got, secretText) {
			t.Errorf("refusal shows the secret: %s", got)
		}
	}
}
