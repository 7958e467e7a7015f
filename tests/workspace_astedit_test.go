//go:build e2e

package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// astModule is a Go module of two packages the structural tools edit.
var astModule = map[string]string{
	"go.mod": "module example.com/shapes\n\ngo 1.22\n",
	"geo/geo.go": `// Package geo has comments everywhere an edit could lose them.
package geo

// Circle is round.
type Circle struct {
	R float64 // radius
}

// Area is the circle's area.
//
// Second paragraph.
func (c *Circle) Area() float64 {
	return 3 * c.R * c.R // wrong on purpose
} // after Area

/* between declarations */

// Scale multiplies v by k.
func Scale(v, k float64) float64 { return v * k }
`,
	"app/app.go": `package app

import "example.com/shapes/geo"

// Run scales twice.
func Run() float64 {
	a := geo.Scale(1, 2) // first
	return geo.Scale(
		a, // value
		3, // factor
	)
}
`,
	"geo/geo_test.go": "package geo\n\nimport \"testing\"\n\nfunc TestScale(t *testing.T) {\n\tif Scale(2, 3) != 6 {\n\t\tt.Fatal(\"Scale\")\n\t}\n}\n",
	"lib.py":          "def f():\n    return 1\n",
}

const astPlanted = "e2e-planted-Token-Value-51b7"

// mermaidBin is the pinned mmdc's folder (make mermaid); under CI=true
// a missing mmdc or chromium fails the test.
func mermaidBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "tests", "mermaid", "node_modules", ".bin")
	_, errM := os.Stat(filepath.Join(bin, "mmdc"))
	_, errC := exec.LookPath("chromium")
	if errM != nil || errC != nil {
		msg := "render_mermaid needs make mermaid and apt-get install chromium"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// TestWorkspaceStructuralTools drives edit_function_body,
// insert_after_method, change_function_signature, secrets_available and
// render_mermaid through a real kiln serve (direct exposure, then the
// meta-tools' call_tool_chain), on a module the test writes.
func TestWorkspaceStructuralTools(t *testing.T) {
	bin := mermaidBin(t)
	root := t.TempDir()
	for p, body := range astModule {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KILN_E2E_SA_TOKEN", astPlanted)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	writeCfg := func(expose string) string {
		cfg := filepath.Join(t.TempDir(), "kiln.yaml")
		body := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  expose: %s
backends:
  repo:
    transport: workspace
    root: %s
    bash:
      timeout: 4m
      max_timeout: 4m30s
      env: [KILN_E2E_SA_TOKEN, KILN_E2E_SA_UNSET]
      git_identity: ${KILN_E2E_SA_IDENT:-kiln e2e <e2e@kiln.invalid>}
`, t.TempDir(), expose, root)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	s := newMCPGoStdio(t, "--config", writeCfg("direct"))
	call := func(t *testing.T, tool string, args map[string]any, wantErr bool, contains ...string) result {
		t.Helper()
		r := callReady(t, s, "repo__"+tool, args)
		if r.IsError != wantErr {
			t.Fatalf("%s: isError = %v, want %v:\n%s", tool, r.IsError, wantErr, r.Text())
		}
		for _, c := range contains {
			if !strings.Contains(r.Text(), c) {
				t.Fatalf("%s lacks %q:\n%s", tool, c, r.Text())
			}
		}
		if strings.Contains(r.Text(), astPlanted) {
			t.Fatalf("%s returned the planted secret value", tool)
		}
		return r
	}
	read := func(t *testing.T, p string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	t.Run("listed", func(t *testing.T) {
		tools, err := s.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"edit_function_body", "insert_after_method", "change_function_signature", "secrets_available", "render_mermaid"} {
			if !slices.Contains(tools, "repo__"+want) {
				t.Errorf("tools/list lacks repo__%s", want)
			}
		}
	})

	t.Run("edit_function_body keeps every comment outside the body", func(t *testing.T) {
		call(t, "edit_function_body", map[string]any{"file_path": "geo/geo.go", "function": "Circle.Area", "new_body": "return 3.14159 * c.R * c.R // right"},
			false, "-\treturn 3 * c.R * c.R // wrong on purpose", "+\treturn 3.14159 * c.R * c.R // right")
		want := strings.Replace(astModule["geo/geo.go"], "return 3 * c.R * c.R // wrong on purpose", "return 3.14159 * c.R * c.R // right", 1)
		if got := read(t, "geo/geo.go"); got != want {
			t.Errorf("geo.go =\n%s\nwant\n%s", got, want)
		}
		before := read(t, "geo/geo.go")
		call(t, "edit_function_body", map[string]any{"file_path": "geo/geo.go", "function": "Scale", "new_body": "return v *"}, true, "new_body does not parse")
		if read(t, "geo/geo.go") != before {
			t.Error("a body that does not parse was written")
		}
		call(t, "edit_function_body", map[string]any{"file_path": "lib.py", "function": "f", "new_body": "return 2"}, true, "not supported for Python yet", "use Edit")
	})

	t.Run("insert_after_method", func(t *testing.T) {
		call(t, "insert_after_method", map[string]any{"file_path": "geo/geo.go", "type": "Circle", "method": "Area", "code": "// Diameter is twice the radius.\nfunc (c *Circle) Diameter() float64 { return 2 * c.R }"},
			false, "+// Diameter is twice the radius.")
		if got := read(t, "geo/geo.go"); !strings.Contains(got, "} // after Area\n\n// Diameter is twice the radius.\nfunc (c *Circle) Diameter() float64 { return 2 * c.R }\n\n/* between declarations */") {
			t.Errorf("geo.go after the insertion:\n%s", got)
		}
	})

	t.Run("change_function_signature and go build", func(t *testing.T) {
		// Reorder, add one with a default value, then remove one.
		call(t, "change_function_signature", map[string]any{"file_path": "geo/geo.go", "function": "Scale",
			"params": []map[string]any{{"name": "k"}, {"name": "v"}, {"name": "offset", "type": "float64", "default_value": "0"}}},
			false, "3 call site(s) in 3 file(s)", "app/app.go:7", "geo/geo_test.go:6")
		app := read(t, "app/app.go")
		if !strings.Contains(app, "geo.Scale(2, 1, 0) // first") || !strings.Contains(app, "3, // factor\n\t\ta, // value\n\t\t0,\n") {
			t.Errorf("app.go:\n%s", app)
		}
		call(t, "run_typecheck", map[string]any{}, false, "passed")
		call(t, "change_function_signature", map[string]any{"file_path": "geo/geo.go", "function": "Scale",
			"params": []map[string]any{{"name": "v"}, {"name": "k", "type": "float64"}}}, false, "Arguments dropped")
		call(t, "run_typecheck", map[string]any{}, false, "passed")
		call(t, "run_tests", map[string]any{}, false, "passed")
		if !strings.Contains(read(t, "geo/geo.go"), "func Scale(v float64, k float64) float64") {
			t.Errorf("geo.go:\n%s", read(t, "geo/geo.go"))
		}
		// A method that an interface of the module declares is refused.
		if err := os.WriteFile(filepath.Join(root, "geo/iface.go"), []byte("package geo\n\n// Shape has an area.\ntype Shape interface{ Area() float64 }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := read(t, "geo/geo.go")
		call(t, "change_function_signature", map[string]any{"file_path": "geo/geo.go", "function": "Circle.Area", "params": []map[string]any{{"name": "k", "type": "int", "default_value": "1"}}},
			true, "interface Shape has a method Area that Circle implements", "nothing was written")
		if read(t, "geo/geo.go") != before {
			t.Error("a refused change wrote geo.go")
		}
	})

	t.Run("secrets_available", func(t *testing.T) {
		call(t, "secrets_available", map[string]any{}, false,
			"KILN_E2E_SA_TOKEN\tset\tfrom kiln's environment, passed by bash.env",
			"(export them before starting kiln): KILN_E2E_SA_UNSET",
			"KILN_E2E_SA_IDENT\tnot set, its default applies\treferenced by backends.repo.bash.git_identity")
	})

	t.Run("render_mermaid", func(t *testing.T) {
		r := call(t, "render_mermaid", map[string]any{"source": "graph TD\n  A[Start] --> B[Stop]\n"}, false, "<svg")
		_ = r
		r = call(t, "render_mermaid", map[string]any{"source": "graph LR; X-->Y", "format": "png"}, false)
		if len(r.Content) != 1 || r.Content[0]["type"] != "image" {
			t.Fatalf("png result = %v", r.Content)
		}
		png, _ := base64.StdEncoding.DecodeString(r.Content[0]["data"].(string))
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("png lacks the PNG magic")
		}
		call(t, "render_mermaid", map[string]any{"source": "graph LR; X-->Y", "output_path": "docs/d.svg"}, false, "Created")
		if !strings.HasPrefix(read(t, "docs/d.svg"), "<svg") {
			t.Errorf("docs/d.svg is not an SVG")
		}
	})

	t.Run("meta-tools, without mmdc", func(t *testing.T) {
		t.Setenv("PATH", strings.Join(slices.DeleteFunc(strings.Split(os.Getenv("PATH"), string(os.PathListSeparator)), func(p string) bool { return p == bin }), string(os.PathListSeparator)))
		m := newMCPGoStdio(t, "--config", writeCfg("meta"))
		eventually(t, "search_tools finds change_function_signature", func() bool {
			r := callReady(t, m, "search_tools", map[string]any{"task_description": "change a function's parameters and update every call site", "limit": 5})
			return strings.Contains(r.Text(), "repo.change_function_signature")
		})
		r := callReady(t, m, "call_tool_chain", chainJSON("repo.render_mermaid", map[string]any{"source": "graph TD; A-->B"}))
		if !r.IsError || !strings.Contains(r.Text(), "npm install -g @mermaid-js/mermaid-cli@") {
			t.Errorf("render_mermaid without mmdc = %v %s", r.IsError, r.Text())
		}
		r = callReady(t, m, "call_tool_chain", chainJSON("repo.secrets_available", map[string]any{}))
		if r.IsError || !strings.Contains(r.Text(), "KILN_E2E_SA_TOKEN") || strings.Contains(r.Text(), astPlanted) {
			t.Errorf("secrets_available through call_tool_chain = %s", r.Text())
		}
		r = callReady(t, m, "call_tool_chain", chainJSON("repo.edit_function_body", map[string]any{"file_path": "geo/geo.go", "function": "Circle.Diameter", "new_body": "return c.R + c.R"}))
		if r.IsError || !strings.Contains(read(t, "geo/geo.go"), "return c.R + c.R") {
			t.Errorf("edit_function_body through call_tool_chain = %s", r.Text())
		}
	})
}
