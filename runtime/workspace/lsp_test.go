package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/config"
)

// lspPath puts the pinned language servers (make lsp) on PATH for the
// languages named, or skips when one is missing; under CI=true that
// fails instead.
func lspPath(t testing.TB, langs ...string) {
	t.Helper()
	gopls, _ := filepath.Abs("../../.cache/lsp/gopls-" + GoplsVersion)
	node, _ := filepath.Abs("../../tests/lsp/node_modules/.bin")
	need := map[string]string{"go": filepath.Join(gopls, "gopls"), "typescript": filepath.Join(node, "typescript-language-server"),
		"python": filepath.Join(node, "pyright-langserver")}
	for _, l := range langs {
		if _, err := os.Stat(need[l]); err != nil {
			msg := "the " + l + " language server is not installed (" + need[l] + "); run make lsp"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	t.Setenv("PATH", gopls+":"+node+":"+os.Getenv("PATH"))
}

// writeTree writes files under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goShapes is a module with an interface and two implementations: the
// call s.Area() in Total goes through the interface, which a Grep for
// Circle's method misses.
var goShapes = map[string]string{
	"go.mod": "module example.com/shapes\n\ngo 1.22\n",
	"shape/shape.go": `package shape

// Shape has an area.
type Shape interface {
	Area() float64
}

// Total sums the areas.
func Total(shapes []Shape) float64 {
	t := 0.0
	for _, s := range shapes {
		t += s.Area()
	}
	return t
}
`,
	"shape/circle.go": `package shape

// Circle is round.
type Circle struct{ R float64 }

// Area is pi r squared.
func (c Circle) Area() float64 { return 3.14 * c.R * c.R }
`,
	"shape/square.go": `package shape

// Square has four equal sides.
type Square struct{ S float64 }

// Area is the side squared.
func (s Square) Area() float64 { return s.S * s.S }
`,
	"report/report.go": `package report

import "example.com/shapes/shape"

// Line describes the total area of shapes.
func Line(shapes []shape.Shape) float64 { return shape.Total(shapes) }
`,
	"main.go": `package main

import (
	"fmt"

	"example.com/shapes/shape"
)

func main() {
	c := shape.Circle{R: 1}
	fmt.Println(c.Area(), shape.Total([]shape.Shape{c, shape.Square{S: 2}}))
}
`,
}

// expectLines fails unless every want line is among got's lines.
func expectLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("%s lacks the line %q:\n%s", what, w, got)
		}
	}
}

// goRun runs go in dir (go build, go vet) and returns its output.
func goRun(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLSPGo: gopls's answers on goShapes equal the hand-computed truth,
// each argument of each tool changes the answer, a rename across three
// files builds, a conflicting or invalid one writes nothing.
func TestLSPGo(t *testing.T) {
	lspPath(t, "go")
	f := newFixture(t, nil)
	writeTree(t, f.root, goShapes)

	t.Run("find_definition", func(t *testing.T) {
		// main.go:11 "fmt.Println(c.Area(), …": column 17 is Area.
		got := f.expectOK("find_definition", map[string]any{"file_path": "main.go", "line": 11, "column": 17})
		if !strings.HasPrefix(got, "shape/circle.go:7-7\n") || !strings.Contains(got, "func (c Circle) Area() float64") {
			t.Errorf("definition of c.Area:\n%s", got)
		}
		got = f.expectOK("find_definition", map[string]any{"symbol": "shape.Total"})
		if !strings.HasPrefix(got, "shape/shape.go:9-15") || !strings.Contains(got, "// Total sums the areas.") {
			t.Errorf("definition of shape.Total:\n%s", got)
		}
		// A bare name matching three methods lists all three; file_path
		// narrows the search to that file.
		got = f.expectOK("find_definition", map[string]any{"symbol": "Area"})
		for _, want := range []string{"shape/shape.go:5-5", "shape/circle.go:7-7", "shape/square.go:7-7"} {
			if !strings.Contains(got, want) {
				t.Errorf("definition of Area lacks %s:\n%s", want, got)
			}
		}
		got = f.expectOK("find_definition", map[string]any{"symbol": "Area", "file_path": "shape/square.go"})
		if !strings.HasPrefix(got, "shape/square.go:7-7") || strings.Contains(got, "circle.go") {
			t.Errorf("definition of Area in square.go:\n%s", got)
		}
		f.expectErr("find_definition", map[string]any{"file_path": "main.go", "line": 99, "column": 1}, "past the end")
		f.expectErr("find_definition", map[string]any{"file_path": "main.go", "line": 11}, "give file_path, line and column together")
		f.expectErr("find_definition", map[string]any{"symbol": "Nope"}, `no declaration named "Nope"`)
		f.expectErr("find_definition", map[string]any{"file_path": "go.mod", "line": 1, "column": 1}, "works on Go, TypeScript")
	})

	t.Run("find_references", func(t *testing.T) {
		// The call through the interface (s.Area() in Total) is a
		// reference of Circle.Area that a Grep for it misses.
		got := f.expectOK("find_references", map[string]any{"symbol": "Circle.Area"})
		expectLines(t, "references of Circle.Area", got, "2 reference(s) in 2 file(s):",
			"main.go:11:16: fmt.Println(c.Area(), shape.Total([]shape.Shape{c, shape.Square{S: 2}}))",
			"shape/shape.go:12:10: t += s.Area()")
		got = f.expectOK("find_references", map[string]any{"file_path": "shape/circle.go", "line": 7, "column": 17, "include_declaration": true})
		expectLines(t, "references with the declaration", got, "3 reference(s) in 3 file(s), the declaration included:",
			"shape/circle.go:7:17: func (c Circle) Area() float64 { return 3.14 * c.R * c.R }")
		got = f.expectOK("find_references", map[string]any{"symbol": "shape.Shape", "head_limit": 1})
		if !strings.Contains(got, "more not shown; raise head_limit") || strings.Count(got, ": ") > 2 {
			t.Errorf("head_limit 1:\n%s", got)
		}
	})

	t.Run("symbols and hover", func(t *testing.T) {
		got := f.expectOK("workspace_symbols", map[string]any{"query": "Area"})
		expectLines(t, "workspace_symbols", got, "method Shape.Area  shape/shape.go:5:2-5", "method Circle.Area  shape/circle.go:7:17-7", "method Square.Area  shape/square.go:7:17-7")
		if got := f.expectOK("workspace_symbols", map[string]any{"query": "Line"}); !strings.Contains(got, "function report.Line  report/report.go:6:6-6") || strings.Contains(got, "Area") {
			t.Errorf("workspace_symbols Line:\n%s", got)
		}
		got = f.expectOK("document_symbols", map[string]any{"file_path": "shape/shape.go"})
		expectLines(t, "document_symbols", got, "shape/shape.go: 3 symbol(s)", "interface Shape  4:6-6  interface{...}", "method Area  5:2-5  func() float64", "function Total  9:1-15  func(shapes []Shape) float64")
		got = f.expectOK("hover", map[string]any{"file_path": "main.go", "line": 11, "column": 17})
		if !strings.Contains(got, "func (c shape.Circle) Area() float64") || !strings.Contains(got, "Area is pi r squared.") {
			t.Errorf("hover:\n%s", got)
		}
		f.expectErr("hover", map[string]any{"file_path": "main.go", "line": 11}, `"column" is required`)
	})

	t.Run("diagnostics", func(t *testing.T) {
		f.expectOK("diagnostics", map[string]any{"file_path": "main.go"})
		f.write("report/broken.go", "package report\n\nfunc Broken() int { return \"x\" }\n")
		got := f.expectOK("diagnostics", map[string]any{})
		if !strings.Contains(got, "report/broken.go:3:28 error") {
			t.Errorf("workspace diagnostics:\n%s", got)
		}
		if got := f.expectOK("diagnostics", map[string]any{"file_path": "main.go"}); strings.Contains(got, "broken.go") {
			t.Errorf("file_path did not narrow the diagnostics:\n%s", got)
		}
		// The post-edit check of Write asks the running server.
		got = f.expectOK("Write", map[string]any{"file_path": "report/broken.go", "content": "package report\n\nfunc Broken() int { return undefinedThing }\n"})
		if !strings.Contains(got, "The Go language server (gopls) reports in report/broken.go:") || !strings.Contains(got, "undefined: undefinedThing") {
			t.Errorf("Write's post-edit check:\n%s", got)
		}
		if err := os.Remove(filepath.Join(f.root, "report/broken.go")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("rename_symbol", func(t *testing.T) {
		before := f.read("shape/shape.go")
		got := f.expectOK("rename_symbol", map[string]any{"symbol": "shape.Shape", "new_name": "Figure", "dry_run": true})
		if !strings.Contains(got, "Dry run, nothing written") || !strings.Contains(got, "+func Line(shapes []shape.Figure) float64") || f.read("shape/shape.go") != before {
			t.Fatalf("dry run:\n%s", got)
		}
		// A conflict gopls reports, an invalid name, a keyword: refused.
		f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "Square"}, "nothing was written")
		f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "1x"}, "not a valid Go identifier")
		f.expectErr("rename_symbol", map[string]any{"symbol": "Circle", "new_name": "func"}, "not a valid Go identifier")
		if f.read("shape/shape.go") != before || f.read("shape/circle.go") != goShapes["shape/circle.go"] {
			t.Fatal("a refused rename wrote files")
		}
		got = f.expectOK("rename_symbol", map[string]any{"file_path": "shape/shape.go", "line": 4, "column": 6, "new_name": "Figure"})
		if !strings.Contains(got, "in 3 file(s)") {
			t.Errorf("rename:\n%s", got)
		}
		for _, p := range []string{"shape/shape.go", "main.go", "report/report.go"} {
			if !strings.Contains(f.read(p), "Figure") || strings.Contains(f.read(p), "Shape") {
				t.Errorf("%s after the rename:\n%s", p, f.read(p))
			}
		}
		if out, err := goRun(t, f.root, "build", "./..."); err != nil {
			t.Fatalf("go build after the rename: %v\n%s", err, out)
		}
		// The server saw the rename: the new name resolves.
		if got := f.expectOK("find_definition", map[string]any{"symbol": "shape.Figure"}); !strings.HasPrefix(got, "shape/shape.go:4-6") {
			t.Errorf("definition after the rename:\n%s", got)
		}
	})
}

// TestLSPGoContainment: a symlink to a planted secret, a go.mod replace
// to a folder outside root: gopls runs confined, so nothing of them
// reaches a result.
func TestLSPGoContainment(t *testing.T) {
	lspPath(t, "go")
	f := newFixture(t, nil)
	writeTree(t, f.root, goShapes)
	writeTree(t, f.outside, map[string]string{
		"mod/go.mod":     "module example.com/outside\n\ngo 1.22\n",
		"mod/outside.go": "package outside\n\n// Leak is " + secretText + ".\nconst Leak = \"" + secretText + "\"\n",
		"leak.go":        "package shape\n\n// Planted is " + secretText + ".\nconst Planted = \"" + secretText + "\"\n",
	})
	if err := os.Symlink(filepath.Join(f.outside, "leak.go"), filepath.Join(f.root, "shape", "leak.go")); err != nil {
		t.Fatal(err)
	}
	f.write("go.mod", "module example.com/shapes\n\ngo 1.22\n\nrequire example.com/outside v0.0.0\n\nreplace example.com/outside => "+filepath.Join(f.outside, "mod")+"\n")
	f.write("use/use.go", "package use\n\nimport \"example.com/outside\"\n\n// Get returns the constant.\nfunc Get() string { return outside.Leak }\n")
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"workspace_symbols", map[string]any{"query": "Leak"}},
		{"workspace_symbols", map[string]any{"query": "Planted"}},
		{"find_definition", map[string]any{"file_path": "use/use.go", "line": 6, "column": 37}},
		{"find_definition", map[string]any{"symbol": "Leak"}},
		{"find_definition", map[string]any{"symbol": "Planted"}},
		{"hover", map[string]any{"file_path": "use/use.go", "line": 6, "column": 37}},
		{"find_references", map[string]any{"file_path": "use/use.go", "line": 6, "column": 37, "include_declaration": true}},
		{"document_symbols", map[string]any{"file_path": "shape/leak.go"}},
		{"diagnostics", map[string]any{}},
		{"diagnostics", map[string]any{"file_path": "use/use.go"}},
		{"rename_symbol", map[string]any{"file_path": "use/use.go", "line": 6, "column": 37, "new_name": "Other"}},
	}
	for _, c := range calls {
		text, _ := f.call(c.tool, c.args)
		if strings.Contains(text, secretText) || strings.Contains(text, f.outside) {
			t.Errorf("%s(%v) showed what lies outside root:\n%s", c.tool, c.args, text)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(f.outside, "mod/outside.go")); !strings.Contains(string(data), "const Leak") {
		t.Error("the rename changed a file outside root")
	}
}

// alive reports whether process pid still exists.
func alive(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// eventually polls cond for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, d)
}

// TestLSPLifecycle: a server per workspace, stopped when idle and with
// the workspace, restarted after a crash that the next answer reports
// once; a missing server is a quick error naming the install command.
func TestLSPLifecycle(t *testing.T) {
	lspPath(t, "go")
	f := newFixture(t, func(c *config.Workspace) { c.LSP.Idle = 3 * time.Second })
	g := newFixture(t, nil)
	pids := map[*fixture]int{}
	for _, x := range []*fixture{f, g} {
		writeTree(t, x.root, goShapes)
		x.expectOK("document_symbols", map[string]any{"file_path": "main.go"})
		pids[x] = x.w.ServerPIDs()["go"]
	}
	fp, gp := pids[f], pids[g]
	if fp == 0 || gp == 0 || fp == gp {
		t.Fatalf("servers: %v and %v, want one each", f.w.ServerPIDs(), g.w.ServerPIDs())
	}
	// Confined like Bash: without network: true, its own empty network
	// namespace.
	own, _ := os.Readlink("/proc/self/ns/net")
	if theirs, err := os.Readlink("/proc/" + strconv.Itoa(gp) + "/ns/net"); err != nil || theirs == own {
		t.Errorf("the server's network namespace is %q (%v), kiln's %q", theirs, err, own)
	}

	t.Run("idle", func(t *testing.T) {
		eventually(t, 10*time.Second, "the idle server stops", func() bool { return len(f.w.ServerPIDs()) == 0 && !alive(fp) })
		if !alive(gp) {
			t.Error("the other workspace's server stopped too")
		}
		f.expectOK("document_symbols", map[string]any{"file_path": "main.go"})
		if f.w.ServerPIDs()["go"] == 0 {
			t.Error("no server after the idle one stopped")
		}
	})

	t.Run("crash", func(t *testing.T) {
		pid := g.w.ServerPIDs()["go"]
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "the crash is noticed", func() bool { return g.w.ServerPIDs()["go"] != pid })
		got := g.expectOK("document_symbols", map[string]any{"file_path": "main.go"})
		if !strings.HasPrefix(got, "Note: the Go language server (gopls) exited unexpectedly") || !strings.Contains(got, "function main") {
			t.Errorf("after the crash:\n%s", got)
		}
		if got := g.expectOK("document_symbols", map[string]any{"file_path": "main.go"}); strings.Contains(got, "exited unexpectedly") {
			t.Errorf("the crash was reported twice:\n%s", got)
		}
	})

	t.Run("close", func(t *testing.T) {
		pid := g.w.ServerPIDs()["go"]
		g.w.Close()
		if alive(pid) {
			t.Errorf("server %d still runs after Close", pid)
		}
	})

	t.Run("missing", func(t *testing.T) {
		h := newFixture(t, func(c *config.Workspace) {
			c.LSP.Servers = map[string][]string{"python": {"no-such-pyright", "--stdio"}}
		})
		h.write("a.py", "x = 1\n")
		start := time.Now()
		h.expectErr("document_symbols", map[string]any{"file_path": "a.py"}, "`no-such-pyright --stdio` (backends.repo.lsp.servers.python) is not on kiln's PATH")
		t.Setenv("PATH", "/usr/bin:/bin")
		h.expectErr("document_symbols", map[string]any{"file_path": "main.go"}, "")
		h.write("b.go", "package b\n")
		h.expectErr("document_symbols", map[string]any{"file_path": "b.go"}, "install it with go install golang.org/x/tools/gopls@"+GoplsVersion)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the missing servers took %s to report", d)
		}
	})
}

// TestServersPinned: the versions the install hints name are the ones
// make lsp installs (Makefile's GOPLS_VERSION, tests/lsp/package.json).
func TestServersPinned(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "\nGOPLS_VERSION       := "+GoplsVersion+"\n") {
		t.Errorf("the Makefile's GOPLS_VERSION is not %s", GoplsVersion)
	}
	pkg, err := os.ReadFile("../../tests/lsp/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"typescript-language-server": TypeScriptServerVersion, "typescript": TypeScriptVersion, "pyright": PyrightVersion}
	if diff := cmp.Diff(want, p.Dependencies); diff != "" {
		t.Errorf("tests/lsp/package.json (-want +got):\n%s", diff)
	}
}

// TestLSPWithoutNamespaces: where the kernel refuses user namespaces the
// server runs under workspace-exec's supervision (Landlock still
// applies), answers, and is gone with the workspace, its children too.
func TestLSPWithoutNamespaces(t *testing.T) {
	lspPath(t, "go")
	f := fallbackFixture(t)
	writeTree(t, f.root, goShapes)
	if got := f.expectOK("find_definition", map[string]any{"symbol": "shape.Total"}); !strings.HasPrefix(got, "shape/shape.go:9-15") {
		t.Errorf("definition:\n%s", got)
	}
	gopls, _ := filepath.Abs("../../.cache/lsp/gopls-" + GoplsVersion + "/gopls")
	// Only this workspace's server: others (earlier tests' still ending,
	// or another test run's) share the binary.
	ours := func() []string { return inRoot(t, procsWith(t, gopls), f.root) }
	if len(ours()) == 0 {
		t.Fatal("no gopls process found")
	}
	for _, p := range ours() {
		if pid, err := strconv.Atoi(p); err == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	f.w.Close()
	eventually(t, 5*time.Second, "gopls ends with the workspace", func() bool { return len(ours()) == 0 })
}

// inRoot keeps the processes of pids whose working folder is root.
func inRoot(t *testing.T, pids []string, root string) []string {
	t.Helper()
	want, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pids {
		if cwd, err := os.Readlink(filepath.Join("/proc", p, "cwd")); err == nil && cwd == want {
			out = append(out, p)
		}
	}
	return out
}
