//go:build e2e

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestWorkspaceAgentTrust drives the workspace as an agent does, through
// a real kiln serve over stdio in direct mode with the workspace tools
// only (issue 25): a Go module that is a git repository, a CRLF file, a
// 3,000-line file read in pages, a Python package with pytest, a
// TypeScript tree with node_modules and dist. Each subtest is one of the
// issue's defects, and failed on the kiln before the fix.
func TestWorkspaceAgentTrust(t *testing.T) {
	root := t.TempDir()
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %04d %s\n", i, strings.Repeat("y", 40))
	}
	files := map[string]string{
		"go.mod":                  "module example.com/calc\n\ngo 1.22\n",
		"calc.go":                 "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
		"notes.txt":               "first\r\nsecond\r\nthird\r\n",
		"big.txt":                 big.String(),
		"conf.py":                 "password = \"hunter2-hunter2\"\nport = 1\n",
		"py/setup.cfg":            "[metadata]\nname = pkg\n",
		"py/pkg/__init__.py":      "def add(a, b):\n    return a - b\n",
		"py/tests/test_math.py":   "from pkg import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
		"web/.gitignore":          "node_modules/\ndist/\n",
		"web/src/app.ts":          "export const needle = 1\n",
		"web/node_modules/x/i.js": "needle\n",
		"web/dist/app.js":         "needle\n",
		"web/.cache/hidden.ts":    "needle\n",
	}
	for p, body := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  expose: direct\nbackends:\n  repo:\n    transport: workspace\n    root: %s\n    bash: {timeout: 4m, max_timeout: 4m30s}\n", t.TempDir(), root)), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("5 tools listed and callable at once", func(t *testing.T) {
		for i := range 3 {
			s := newMCPGoStdio(t, "--config", cfg)
			tools, err := s.ListTools(t.Context())
			if err != nil || len(tools) < 15 || !strings.Contains(strings.Join(tools, " "), "repo__Bash") {
				t.Fatalf("connection %d: first tools/list = %v, %v", i, tools, err)
			}
			r, err := s.Call(t.Context(), "repo__Bash", map[string]any{"command": "echo at-once"})
			if err != nil || r.IsError || !strings.Contains(r.Text(), "at-once") {
				t.Fatalf("connection %d: first call: %v %s", i, err, r.Text())
			}
			s.Close()
		}
	})

	s := newMCPGoStdio(t, "--config", cfg)
	call := func(t *testing.T, tool string, args map[string]any, wantErr bool, contains ...string) string {
		t.Helper()
		r, err := s.Call(t.Context(), "repo__"+tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if r.IsError != wantErr {
			t.Fatalf("%s(%v): isError = %v, want %v:\n%s", tool, args, r.IsError, wantErr, r.Text())
		}
		for _, c := range contains {
			if !strings.Contains(r.Text(), c) {
				t.Fatalf("%s(%v) lacks %q:\n%s", tool, args, c, r.Text())
			}
		}
		return r.Text()
	}

	t.Run("11 annotations", func(t *testing.T) {
		res, err := s.(*mcpgoSession).c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			a := tool.Annotations
			if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
				t.Errorf("%s: annotations %+v lack a hint", tool.Name, a)
				continue
			}
			switch tool.Name {
			case "repo__Read", "repo__Glob", "repo__Grep", "repo__snapshot_list":
				if !*a.ReadOnlyHint || *a.DestructiveHint || *a.OpenWorldHint {
					t.Errorf("%s: %+v, want read-only, not destructive, closed world", tool.Name, a)
				}
			case "repo__Write", "repo__Edit", "repo__Bash":
				if *a.ReadOnlyHint || !*a.DestructiveHint {
					t.Errorf("%s: %+v, want destructive", tool.Name, a)
				}
			}
		}
	})

	t.Run("1 git and go build in a repository", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Fatal("git is not installed")
		}
		call(t, "Bash", map[string]any{"command": "git init -q && git add -A && git commit -q -m start && git log --format='%an <%ae>'"}, false, "kiln workspace <kiln@workspace.invalid>")
		call(t, "run_typecheck", map[string]any{}, false, "passed")
	})

	t.Run("2 a 3,000-line file in pages", func(t *testing.T) {
		seen := map[int]bool{}
		next := regexp.MustCompile(`continue with offset (\d+)\)\n$`)
		for offset, pages := 1, 0; ; pages++ {
			text := call(t, "Read", map[string]any{"file_path": "big.txt", "offset": offset}, false)
			if strings.Contains(text, "truncated") || len(text) > 40000 {
				t.Fatalf("page at %d was cut by the gateway (%d bytes)", offset, len(text))
			}
			for _, l := range strings.Split(text, "\n") {
				if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(l, "\t", 2)[0])); err == nil {
					seen[n] = true
				}
			}
			m := next.FindStringSubmatch(text)
			if m == nil || pages > 20 {
				break
			}
			offset, _ = strconv.Atoi(m[1])
		}
		for i := 1; i <= 3000; i++ {
			if !seen[i] {
				t.Fatalf("line %d never shown", i)
			}
		}
	})

	t.Run("3 CRLF edit", func(t *testing.T) {
		call(t, "Edit", map[string]any{"file_path": "notes.txt", "old_string": "first\nsecond", "new_string": "one\ntwo"}, false, "Edited")
		data, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
		if string(data) != "one\r\ntwo\r\nthird\r\n" {
			t.Errorf("notes.txt = %q", data)
		}
	})

	t.Run("4 edit around a scrubbed secret", func(t *testing.T) {
		text := call(t, "Read", map[string]any{"file_path": "conf.py"}, false, "[REDACTED:")
		line := strings.SplitN(strings.SplitN(text, "\n", 2)[0], "\t", 2)[1]
		call(t, "Edit", map[string]any{"file_path": "conf.py", "old_string": line, "new_string": line + " # kept"}, false, "Edited")
		if data, _ := os.ReadFile(filepath.Join(root, "conf.py")); !strings.HasPrefix(string(data), "password = \"hunter2-hunter2\" # kept\n") {
			t.Errorf("conf.py = %q", data)
		}
		call(t, "Read", map[string]any{"file_path": "/etc/passwd"}, true, "outside the workspace root")
	})

	t.Run("6 ignores and hidden", func(t *testing.T) {
		text := call(t, "Grep", map[string]any{"pattern": "needle", "path": "web"}, false, "app.ts")
		for _, skip := range []string{"node_modules", "dist", ".cache"} {
			if strings.Contains(text, skip) {
				t.Errorf("Grep searched %s:\n%s", skip, text)
			}
		}
		call(t, "Grep", map[string]any{"pattern": "needle", "path": "web", "hidden": true}, false, ".cache/hidden.ts")
	})

	t.Run("7 and 12 exit status and python run_tests", func(t *testing.T) {
		if !strings.HasPrefix(call(t, "Bash", map[string]any{"command": "exit 3"}, true), "exit code: 3") {
			t.Error("exit 3 does not start with its code")
		}
		if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
			t.Fatal("Debian's python3-pytest is not installed (.ci/run installs it)")
		}
		py := filepath.Join(t.TempDir(), "kiln.yaml")
		if err := os.WriteFile(py, []byte(fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  expose: direct\nbackends:\n  py:\n    transport: workspace\n    root: %s\n", t.TempDir(), filepath.Join(root, "py"))), 0o644); err != nil {
			t.Fatal(err)
		}
		ps := newMCPGoStdio(t, "--config", py)
		r, err := ps.Call(t.Context(), "py__run_tests", map[string]any{})
		if err != nil || !r.IsError || !strings.HasPrefix(r.Text(), "run_tests (Python project): FAILED, exit code: 1") || !strings.Contains(r.Text(), "assert -1 == 5") {
			t.Fatalf("failing pytest: %v %v\n%s", err, r.IsError, r.Text())
		}
		if err := os.WriteFile(filepath.Join(root, "py/pkg/__init__.py"), []byte("def add(a, b):\n    return a + b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err = ps.Call(t.Context(), "py__run_tests", map[string]any{"path": "tests/test_math.py", "name": "test_add"})
		if err != nil || r.IsError || !strings.Contains(r.Text(), "1 passed") {
			t.Fatalf("passing pytest: %v %v\n%s", err, r.IsError, r.Text())
		}
	})

	t.Run("8 9 10 background shells", func(t *testing.T) {
		text := call(t, "Bash", map[string]any{"command": "printf 'a1\\nb2\\n'; sleep 30", "run_in_background": true, "timeout": 500}, false, "bash_id")
		id := regexp.MustCompile(`bash_\d+`).FindString(text)
		var out string
		eventually(t, "the background shell ends at its timeout", func() bool {
			r, err := s.Call(t.Context(), "repo__BashOutput", map[string]any{"bash_id": id, "filter": "2$"})
			if err != nil {
				t.Fatal(err)
			}
			out += r.Text()
			return strings.Contains(r.Text(), "status: finished")
		})
		if !strings.Contains(out, "ran past its timeout") || !strings.Contains(out, "b2") || strings.Contains(out, "a1") {
			t.Errorf("background shell: %s", out)
		}
		call(t, "BashOutput", map[string]any{"bash_id": id}, true, "status: finished")
	})

	t.Run("14 schemas", func(t *testing.T) {
		call(t, "Read", map[string]any{"file_path": "calc.go", "offset": 1.5}, true)
		call(t, "Read", map[string]any{"file_path": "calc.go", "offset": 0}, true, "offset")
		call(t, "Read", map[string]any{"file_path": "calc.go", "pages": "1"}, true, "pages")
	})

	t.Run("snapshot diff and delete", func(t *testing.T) {
		call(t, "snapshot_create", map[string]any{"name": "s"}, false)
		call(t, "Write", map[string]any{"file_path": "added.txt", "content": "x\n"}, false)
		call(t, "snapshot_diff", map[string]any{"id": "s"}, false, "A added.txt")
		call(t, "snapshot_delete", map[string]any{"id": "s"}, false, "Deleted")
	})
}
