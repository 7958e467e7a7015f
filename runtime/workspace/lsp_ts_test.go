package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsGeo is a TypeScript package whose classes are re-exported through an
// index module.
var tsGeo = map[string]string{
	"package.json":  `{"name": "geo", "private": true, "version": "1.0.0"}` + "\n",
	"tsconfig.json": `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020", "noEmit": true}, "include": ["src"]}` + "\n",
	"src/shapes/circle.ts": `/** A round shape. */
export class Circle {
  constructor(public r: number) {}
  /** The area, pi r squared. */
  area(): number {
    return 3.14 * this.r * this.r;
  }
}
`,
	"src/shapes/square.ts": `export class Square {
  constructor(public s: number) {}
  area(): number {
    return this.s * this.s;
  }
}
`,
	"src/shapes/index.ts": `export { Circle } from "./circle";
export { Square } from "./square";

export interface Shape {
  area(): number;
}
`,
	"src/total.ts": `import { Shape } from "./shapes";

export function total(shapes: Shape[]): number {
  let t = 0;
  for (const s of shapes) {
    t += s.area();
  }
  return t;
}
`,
	"src/main.ts": `import { Circle, Square } from "./shapes";
import { total } from "./total";

const c = new Circle(1);
console.log(c.area(), total([c, new Square(2)]));
`,
}

// pyZoo is a Python package with a class hierarchy.
var pyZoo = map[string]string{
	"pyproject.toml":  "[project]\nname = \"zoo\"\nversion = \"0.1.0\"\n",
	"zoo/__init__.py": "",
	"zoo/animal.py": `class Animal:
    """Something alive."""

    def speak(self) -> str:
        """What it says."""
        return "..."
`,
	"zoo/dog.py": `from zoo.animal import Animal


class Dog(Animal):
    def speak(self) -> str:
        return "woof"
`,
	"zoo/cat.py": `from zoo.animal import Animal


class Cat(Animal):
    def speak(self) -> str:
        return "meow"
`,
	"zoo/chorus.py": `from zoo.animal import Animal
from zoo.cat import Cat
from zoo.dog import Dog


def chorus(animals: list[Animal]) -> str:
    return " ".join(a.speak() for a in animals)


def main() -> str:
    return chorus([Dog(), Cat()])
`,
}

// nodeTool runs a tool of tests/lsp (tsc, pyright) in dir.
func nodeTool(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	bin, _ := filepath.Abs("../../tests/lsp/node_modules/.bin")
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLSPTypeScript: typescript-language-server's answers on tsGeo equal
// the hand-computed truth, through the index module's re-exports; a
// rename across three files type-checks; an invalid one writes nothing.
func TestLSPTypeScript(t *testing.T) {
	lspPath(t, "typescript")
	f := newFixture(t, nil)
	writeTree(t, f.root, tsGeo)

	got := f.expectOK("find_definition", map[string]any{"file_path": "src/main.ts", "line": 5, "column": 15})
	if !strings.HasPrefix(got, "src/shapes/circle.ts:5-7\n") {
		t.Errorf("definition of c.area:\n%s", got)
	}
	// Through the import from ./shapes and its re-export: the class.
	got = f.expectOK("find_definition", map[string]any{"symbol": "Circle"})
	if !strings.HasPrefix(got, "src/shapes/circle.ts:2-8\n") || strings.Contains(got, "index.ts") {
		t.Errorf("definition of Circle:\n%s", got)
	}
	if got := f.expectOK("find_definition", map[string]any{"symbol": "Square.area"}); !strings.HasPrefix(got, "src/shapes/square.ts:3-5\n") {
		t.Errorf("definition of Square.area:\n%s", got)
	}
	got = f.expectOK("find_references", map[string]any{"symbol": "Circle"})
	expectLines(t, "references of Circle", got, "3 reference(s) in 2 file(s):",
		`src/main.ts:1:10: import { Circle, Square } from "./shapes";`, "src/main.ts:4:15: const c = new Circle(1);",
		`src/shapes/index.ts:1:10: export { Circle } from "./circle";`)
	got = f.expectOK("find_references", map[string]any{"symbol": "Shape.area", "include_declaration": true})
	expectLines(t, "references of Shape.area", got, "2 reference(s) in 2 file(s), the declaration included:",
		"src/shapes/index.ts:5:3: area(): number;", "src/total.ts:6:12: t += s.area();")
	got = f.expectOK("workspace_symbols", map[string]any{"query": "area"})
	expectLines(t, "workspace_symbols", got, "method area  src/shapes/circle.ts:5:3-7", "method area  src/shapes/square.ts:3:3-5", "method area  src/shapes/index.ts:5:3-5")
	got = f.expectOK("document_symbols", map[string]any{"file_path": "src/shapes/circle.ts"})
	expectLines(t, "document_symbols", got, "class Circle  2:1-8", "method area  5:3-7")
	got = f.expectOK("hover", map[string]any{"file_path": "src/main.ts", "line": 5, "column": 15})
	if !strings.Contains(got, "(method) Circle.area(): number") || !strings.Contains(got, "The area, pi r squared.") {
		t.Errorf("hover:\n%s", got)
	}

	f.write("src/bad.ts", "export const n: number = \"x\";\n")
	if got := f.expectOK("diagnostics", map[string]any{}); !strings.Contains(got, "src/bad.ts:1:14 error Type 'string' is not assignable to type 'number'.") {
		t.Errorf("diagnostics:\n%s", got)
	}
	if got := f.expectOK("diagnostics", map[string]any{"file_path": "src/main.ts"}); !strings.Contains(got, "No problems in src/main.ts") {
		t.Errorf("diagnostics of main.ts:\n%s", got)
	}
	if got := f.expectOK("Edit", map[string]any{"file_path": "src/bad.ts", "old_string": `"x"`, "new_string": "true"}); !strings.Contains(got, "The TypeScript language server (typescript-language-server) reports in src/bad.ts:") || !strings.Contains(got, "Type 'boolean'") {
		t.Errorf("Edit's post-edit check:\n%s", got)
	}
	if err := os.Remove(filepath.Join(f.root, "src/bad.ts")); err != nil {
		t.Fatal(err)
	}

	before := f.read("src/main.ts")
	// tsserver proposes a clash with the Square already imported beside
	// it; its diagnostics of the trial show it.
	got = f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Square"}, "would introduce errors the TypeScript language server reports")
	if !strings.Contains(got, "src/main.ts:1: Duplicate identifier 'Square'.") {
		t.Errorf("clash refused without its reason:\n%s", got)
	}
	f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "class"}, "not a valid TypeScript identifier")
	f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "a-b"}, "nothing was written")
	if f.read("src/main.ts") != before {
		t.Fatal("a refused rename wrote main.ts")
	}
	got = f.expectOK("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Round"})
	if !strings.Contains(got, "4 edit(s) in 3 file(s)") || !strings.Contains(f.read("src/shapes/index.ts"), `export { Round } from "./circle";`) {
		t.Errorf("rename:\n%s", got)
	}
	if out, err := nodeTool(t, f.root, "tsc", "--noEmit", "-p", "."); err != nil {
		t.Fatalf("tsc --noEmit after the rename: %v\n%s", err, out)
	}
}

// TestLSPPython: pyright's answers on pyZoo equal the hand-computed
// truth; a rename across four files type-checks; an invalid one writes
// nothing.
func TestLSPPython(t *testing.T) {
	lspPath(t, "python")
	f := newFixture(t, nil)
	writeTree(t, f.root, pyZoo)

	// chorus.py:7 'return " ".join(a.speak() …': a is an Animal.
	got := f.expectOK("find_definition", map[string]any{"file_path": "zoo/chorus.py", "line": 7, "column": 24})
	if !strings.HasPrefix(got, "zoo/animal.py:4-6\n") {
		t.Errorf("definition of a.speak:\n%s", got)
	}
	if got := f.expectOK("find_definition", map[string]any{"symbol": "Dog.speak"}); !strings.HasPrefix(got, "zoo/dog.py:5-6\n") {
		t.Errorf("definition of Dog.speak:\n%s", got)
	}
	got = f.expectOK("find_references", map[string]any{"symbol": "Animal"})
	expectLines(t, "references of Animal", got, "6 reference(s) in 3 file(s):", "zoo/cat.py:4:11: class Cat(Animal):",
		"zoo/dog.py:1:24: from zoo.animal import Animal", "zoo/chorus.py:6:26: def chorus(animals: list[Animal]) -> str:")
	got = f.expectOK("find_references", map[string]any{"symbol": "Animal.speak", "include_declaration": true})
	expectLines(t, "references of Animal.speak", got, "2 reference(s) in 2 file(s), the declaration included:",
		"zoo/animal.py:4:9: def speak(self) -> str:", `zoo/chorus.py:7:23: return " ".join(a.speak() for a in animals)`)
	got = f.expectOK("workspace_symbols", map[string]any{"query": "speak"})
	expectLines(t, "workspace_symbols", got, "method Animal.speak  zoo/animal.py:4:9-4", "method Cat.speak  zoo/cat.py:5:9-5", "method Dog.speak  zoo/dog.py:5:9-5")
	got = f.expectOK("document_symbols", map[string]any{"file_path": "zoo/dog.py"})
	expectLines(t, "document_symbols", got, "class Dog  4:1-6", "method speak  5:5-6")
	if got := f.expectOK("hover", map[string]any{"file_path": "zoo/chorus.py", "line": 7, "column": 24}); !strings.Contains(got, "def speak() -> str") || !strings.Contains(got, "What it says.") {
		t.Errorf("hover:\n%s", got)
	}
	f.write("zoo/bad.py", "from zoo.dog import Dog\n\nDog().bark()\n")
	if got := f.expectOK("diagnostics", map[string]any{"file_path": "zoo/bad.py"}); !strings.Contains(got, `zoo/bad.py:3:7 error Cannot access attribute "bark" for class "Dog"`) {
		t.Errorf("diagnostics:\n%s", got)
	}
	if err := os.Remove(filepath.Join(f.root, "zoo/bad.py")); err != nil {
		t.Fatal(err)
	}

	f.expectErr("rename_symbol", map[string]any{"symbol": "Animal", "new_name": "class"}, "not a valid Python identifier")
	f.write("zoo/util.py", "def loud(x: str) -> str:\n    return x.upper()\n\n\ndef quiet(x: str) -> str:\n    return x.lower()\n")
	f.expectErr("rename_symbol", map[string]any{"symbol": "quiet", "new_name": "loud"}, `zoo/util.py:1: Function declaration "loud" is obscured by a declaration of the same name`)
	if f.read("zoo/util.py") != "def loud(x: str) -> str:\n    return x.upper()\n\n\ndef quiet(x: str) -> str:\n    return x.lower()\n" {
		t.Fatal("a refused rename wrote util.py")
	}
	if f.read("zoo/animal.py") != pyZoo["zoo/animal.py"] {
		t.Fatal("a refused rename wrote animal.py")
	}
	got = f.expectOK("rename_symbol", map[string]any{"file_path": "zoo/animal.py", "line": 1, "column": 7, "new_name": "Creature"})
	if !strings.Contains(got, "7 edit(s) in 4 file(s)") {
		t.Errorf("rename:\n%s", got)
	}
	if out, err := nodeTool(t, f.root, "pyright", "zoo"); err != nil {
		t.Fatalf("pyright after the rename: %v\n%s", err, out)
	}
}

// TestLSPTypeScriptContainment: a tsconfig paths entry and a symlink
// leading outside root: the confined server reads neither.
func TestLSPTypeScriptContainment(t *testing.T) {
	lspPath(t, "typescript")
	f := newFixture(t, nil)
	writeTree(t, f.root, tsGeo)
	writeTree(t, f.outside, map[string]string{"lib/leak.ts": "/** " + secretText + " */\nexport const leak = \"" + secretText + "\";\n"})
	f.write("tsconfig.json", `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020", "noEmit": true, "baseUrl": ".", "paths": {"@out/*": ["`+f.outside+`/lib/*"]}}, "include": ["src"]}`)
	f.write("src/use.ts", "import { leak } from \"@out/leak\";\nexport const x = leak;\n")
	if err := os.Symlink(filepath.Join(f.outside, "lib", "leak.ts"), filepath.Join(f.root, "src", "linked.ts")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"hover", map[string]any{"file_path": "src/use.ts", "line": 2, "column": 18}},
		{"find_definition", map[string]any{"file_path": "src/use.ts", "line": 2, "column": 18}},
		{"find_definition", map[string]any{"symbol": "leak"}},
		{"workspace_symbols", map[string]any{"query": "leak"}},
		{"find_references", map[string]any{"file_path": "src/use.ts", "line": 1, "column": 10, "include_declaration": true}},
		{"diagnostics", map[string]any{}},
		{"document_symbols", map[string]any{"file_path": "src/linked.ts"}},
	} {
		// The path the project's own tsconfig names may appear in a
		// message (tsserver: "is not a module", it could not read it);
		// what the file holds never does.
		text, _ := f.call(c.tool, c.args)
		if strings.Contains(text, secretText) {
			t.Errorf("%s(%v) showed what lies outside root:\n%s", c.tool, c.args, text)
		}
	}
}

// TestLSPPythonContainment: pyright's extraPaths and a symlink leading
// outside root: the confined server reads neither.
func TestLSPPythonContainment(t *testing.T) {
	lspPath(t, "python")
	f := newFixture(t, nil)
	writeTree(t, f.root, pyZoo)
	writeTree(t, f.outside, map[string]string{"pylib/leaky.py": "LEAK = \"" + secretText + "\"\n\"\"\"" + secretText + "\"\"\"\n"})
	f.write("pyrightconfig.json", `{"extraPaths": ["`+filepath.Join(f.outside, "pylib")+`"]}`)
	f.write("zoo/use.py", "from leaky import LEAK\n\nprint(LEAK)\n")
	if err := os.Symlink(filepath.Join(f.outside, "pylib", "leaky.py"), filepath.Join(f.root, "zoo", "linked.py")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"hover", map[string]any{"file_path": "zoo/use.py", "line": 3, "column": 7}},
		{"find_definition", map[string]any{"file_path": "zoo/use.py", "line": 3, "column": 7}},
		{"find_definition", map[string]any{"symbol": "LEAK"}},
		{"workspace_symbols", map[string]any{"query": "LEAK"}},
		{"diagnostics", map[string]any{}},
		{"document_symbols", map[string]any{"file_path": "zoo/linked.py"}},
	} {
		text, _ := f.call(c.tool, c.args)
		if strings.Contains(text, secretText) {
			t.Errorf("%s(%v) showed what lies outside root:\n%s", c.tool, c.args, text)
		}
	}
}
