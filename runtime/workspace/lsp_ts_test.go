package workspace

import (
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

func TestLSPProbe(t *testing.T) {
	lspPath(t, "typescript", "python")
	f := newFixture(t, nil)
	writeTree(t, f.root, tsGeo)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"find_definition", map[string]any{"file_path": "src/main.ts", "line": 5, "column": 15}},
		{"find_definition", map[string]any{"symbol": "Circle"}},
		{"find_definition", map[string]any{"symbol": "Circle.area"}},
		{"find_references", map[string]any{"symbol": "Circle"}},
		{"find_references", map[string]any{"symbol": "Shape.area", "include_declaration": true}},
		{"workspace_symbols", map[string]any{"query": "area"}},
		{"document_symbols", map[string]any{"file_path": "src/shapes/circle.ts"}},
		{"hover", map[string]any{"file_path": "src/main.ts", "line": 5, "column": 15}},
		{"rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Round", "dry_run": true}},
		{"diagnostics", map[string]any{}},
	} {
		text, isErr := f.call(c.tool, c.args)
		t.Logf("%s %v (err %v):\n%s", c.tool, c.args, isErr, text)
	}
	p := newFixture(t, nil)
	writeTree(t, p.root, pyZoo)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"find_definition", map[string]any{"file_path": "zoo/chorus.py", "line": 7, "column": 24}},
		{"find_definition", map[string]any{"symbol": "Dog"}},
		{"find_definition", map[string]any{"symbol": "Animal.speak"}},
		{"find_references", map[string]any{"symbol": "Animal"}},
		{"find_references", map[string]any{"symbol": "Animal.speak", "include_declaration": true}},
		{"workspace_symbols", map[string]any{"query": "speak"}},
		{"document_symbols", map[string]any{"file_path": "zoo/dog.py"}},
		{"hover", map[string]any{"file_path": "zoo/chorus.py", "line": 7, "column": 24}},
		{"rename_symbol", map[string]any{"symbol": "Animal", "new_name": "Creature", "dry_run": true}},
		{"diagnostics", map[string]any{}},
	} {
		text, isErr := p.call(c.tool, c.args)
		t.Logf("%s %v (err %v):\n%s", c.tool, c.args, isErr, text)
	}
}
