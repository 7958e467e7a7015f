//go:build e2e

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/workspace"
)

// lspBin links the pinned language servers (make lsp) into a folder of
// the test's own, put first on PATH: the servers' command lines then name
// it, so the test finds exactly its own processes. Under CI=true a
// missing server fails the test.
func lspBin(t *testing.T) string {
	t.Helper()
	repo := repoRoot(t)
	srcs := map[string]string{
		"gopls":                      filepath.Join(repo, ".cache", "lsp", "gopls-"+workspace.GoplsVersion, "gopls"),
		"typescript-language-server": filepath.Join(repo, "tests", "lsp", "node_modules", ".bin", "typescript-language-server"),
		"pyright-langserver":         filepath.Join(repo, "tests", "lsp", "node_modules", ".bin", "pyright-langserver"),
	}
	bin := filepath.Join(t.TempDir(), "lspbin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range srcs {
		if _, err := os.Stat(src); err != nil {
			msg := name + " is not installed (" + src + "); run make lsp"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		if err := os.Symlink(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return bin
}

var lspProjects = map[string]map[string]string{
	"gomod": {
		"go.mod":           "module example.com/shapes\n\ngo 1.22\n",
		"shape/shape.go":   "package shape\n\n// Shape has an area.\ntype Shape interface {\n\tArea() float64\n}\n\n// Total sums the areas.\nfunc Total(shapes []Shape) float64 {\n\tt := 0.0\n\tfor _, s := range shapes {\n\t\tt += s.Area()\n\t}\n\treturn t\n}\n",
		"shape/circle.go":  "package shape\n\n// Circle is round.\ntype Circle struct{ R float64 }\n\n// Area is pi r squared.\nfunc (c Circle) Area() float64 { return 3.14 * c.R * c.R }\n",
		"shape/square.go":  "package shape\n\n// Square has four equal sides.\ntype Square struct{ S float64 }\n\n// Area is the side squared.\nfunc (s Square) Area() float64 { return s.S * s.S }\n",
		"report/report.go": "package report\n\nimport \"example.com/shapes/shape\"\n\n// Line describes the total area of shapes.\nfunc Line(shapes []shape.Shape) float64 { return shape.Total(shapes) }\n",
		"main.go":          "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/shapes/shape\"\n)\n\nfunc main() {\n\tc := shape.Circle{R: 1}\n\tfmt.Println(c.Area(), shape.Total([]shape.Shape{c, shape.Square{S: 2}}))\n}\n",
	},
	"web": {
		"package.json":         `{"name": "geo", "private": true, "version": "1.0.0"}` + "\n",
		"tsconfig.json":        `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020", "noEmit": true}, "include": ["src"]}` + "\n",
		"src/shapes/circle.ts": "/** A round shape. */\nexport class Circle {\n  constructor(public r: number) {}\n  area(): number {\n    return 3.14 * this.r * this.r;\n  }\n}\n",
		"src/shapes/index.ts":  "export { Circle } from \"./circle\";\n",
		"src/main.ts":          "import { Circle } from \"./shapes\";\n\nconst c = new Circle(1);\nconsole.log(c.area());\n",
	},
	"zoo": {
		"pyproject.toml":  "[project]\nname = \"zoo\"\nversion = \"0.1.0\"\n",
		"zoo/__init__.py": "",
		"zoo/animal.py":   "class Animal:\n    \"\"\"Something alive.\"\"\"\n\n    def speak(self) -> str:\n        return \"...\"\n",
		"zoo/dog.py":      "from zoo.animal import Animal\n\n\nclass Dog(Animal):\n    def speak(self) -> str:\n        return \"woof\"\n",
		"zoo/chorus.py":   "from zoo.animal import Animal\nfrom zoo.dog import Dog\n\n\ndef chorus(animals: list[Animal]) -> str:\n    return \" \".join(a.speak() for a in animals)\n\n\ndef main() -> str:\n    return chorus([Dog()])\n",
	},
}

// TestWorkspaceLanguageServers drives the navigation tools through a real
// kiln serve with real gopls, typescript-language-server and pyright:
// direct exposure and call_tool_chain, answers equal to the hand-computed
// truth, a rename that builds, a workspace per server, and no server
// left once kiln exits.
func TestWorkspaceLanguageServers(t *testing.T) {
	bin := lspBin(t)
	base := t.TempDir()
	roots := map[string]string{}
	for name, files := range lspProjects {
		roots[name] = filepath.Join(base, name)
		for p, body := range files {
			full := filepath.Join(roots[name], p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second Go workspace over a copy: its own gopls.
	roots["gocopy"] = filepath.Join(base, "gocopy")
	if out, err := exec.Command("cp", "-r", roots["gomod"], roots["gocopy"]).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "version: 1\ngateway:\n  state_dir: %s\n  expose: hybrid\n  pin: [gomod.*, web.*, zoo.*, gocopy.*]\nbackends:\n", filepath.Join(base, "state"))
	for _, name := range []string{"gomod", "gocopy", "web", "zoo"} {
		fmt.Fprintf(&cfg, "  %s:\n    transport: workspace\n    root: %s\n    bash: {timeout: 4m, max_timeout: 4m30s}\n    lsp: {idle: 5m}\n", name, roots[name])
	}
	cfgPath := filepath.Join(base, "kiln.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newMCPGoStdio(t, "--config", cfgPath)
	call := func(t *testing.T, tool string, args map[string]any, wantErr bool, contains ...string) string {
		t.Helper()
		r := callReady(t, s, tool, args)
		if r.IsError != wantErr {
			t.Fatalf("%s: isError = %v, want %v:\n%s", tool, r.IsError, wantErr, r.Text())
		}
		for _, c := range contains {
			if !strings.Contains(r.Text(), c) {
				t.Fatalf("%s lacks %q:\n%s", tool, c, r.Text())
			}
		}
		return r.Text()
	}

	t.Run("listed", func(t *testing.T) {
		tools, err := s.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"find_definition", "find_references", "workspace_symbols", "document_symbols", "hover", "rename_symbol", "diagnostics"} {
			if !slices.Contains(tools, "gomod__"+want) {
				t.Errorf("tools/list lacks gomod__%s", want)
			}
		}
		eventually(t, "search_tools finds find_references", func() bool {
			r := callReady(t, s, "search_tools", map[string]any{"task_description": "find every caller of a function, including calls through an interface", "limit": 8})
			return strings.Contains(r.Text(), "find_references")
		})
	})

	t.Run("go", func(t *testing.T) {
		call(t, "gomod__find_references", map[string]any{"symbol": "Circle.Area"}, false,
			"2 reference(s) in 2 file(s):", "main.go:11:16: fmt.Println(c.Area()", "shape/shape.go:12:10: t += s.Area()")
		call(t, "gomod__find_definition", map[string]any{"file_path": "main.go", "line": 11, "column": 17}, false, "shape/circle.go:7-7\n")
		call(t, "gomod__hover", map[string]any{"file_path": "main.go", "line": 11, "column": 17}, false, "Area is pi r squared.")
		call(t, "gomod__rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Square"}, true, "nothing was written")
		call(t, "gomod__rename_symbol", map[string]any{"symbol": "shape.Shape", "new_name": "Figure"}, false, "in 3 file(s)")
		call(t, "gomod__run_typecheck", map[string]any{}, false, "passed")
		t.Log(call(t, "gomod__workspace_symbols", map[string]any{"query": "Figure"}, false))
		// Through call_tool_chain too.
		r := callReady(t, s, "call_tool_chain", chainJSON("gomod.workspace_symbols", map[string]any{"query": "Figure"}))
		if r.IsError || !strings.Contains(r.Text(), "interface shape.Figure  shape/shape.go:4:6-4") {
			t.Errorf("workspace_symbols through call_tool_chain:\n%s", r.Text())
		}
	})

	t.Run("typescript", func(t *testing.T) {
		call(t, "web__find_definition", map[string]any{"symbol": "Circle"}, false, "src/shapes/circle.ts:2-7\n")
		call(t, "web__find_references", map[string]any{"symbol": "Circle"}, false, "3 reference(s) in 2 file(s):", `src/shapes/index.ts:1:10: export { Circle } from "./circle";`)
		call(t, "web__rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Round"}, false, "in 3 file(s)")
		call(t, "web__diagnostics", map[string]any{}, false, "No problems")
	})

	t.Run("python", func(t *testing.T) {
		call(t, "zoo__find_definition", map[string]any{"file_path": "zoo/chorus.py", "line": 6, "column": 24}, false, "zoo/animal.py:4-5\n")
		call(t, "zoo__find_references", map[string]any{"symbol": "Animal"}, false, "zoo/dog.py:4:11: class Dog(Animal):")
		call(t, "zoo__rename_symbol", map[string]any{"symbol": "Animal", "new_name": "Creature"}, false, "in 3 file(s)")
		call(t, "zoo__diagnostics", map[string]any{}, false, "No problems")
	})

	t.Run("two workspaces, two servers", func(t *testing.T) {
		call(t, "gocopy__document_symbols", map[string]any{"file_path": "main.go"}, false, "function main")
		if n := len(procsWith(t, filepath.Join(bin, "gopls"))); n != 2 {
			t.Errorf("%d gopls processes, want one per Go workspace", n)
		}
	})

	t.Run("kiln's exit leaves no server", func(t *testing.T) {
		if len(procsWith(t, bin)) < 4 {
			t.Fatalf("servers before the exit: %v", procsWith(t, bin))
		}
		s.Close()
		eventually(t, "every language server is gone", func() bool { return len(procsWith(t, bin)) == 0 })
	})
}
