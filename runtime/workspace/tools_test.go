package workspace

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

func TestRead(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.txt", "one\ntwo\nthree\n"+strings.Repeat("x", 2500)+"\n")
	f.write("empty.txt", "")
	f.write("bin.dat", "ab\x00cd")
	if err := os.Mkdir(filepath.Join(f.root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := f.expectOK("Read", map[string]any{"file_path": "a.txt"})
	if !strings.HasPrefix(got, "     1\tone\n     2\ttwo\n     3\tthree\n     4\txxx") || !strings.Contains(got, "… [line cut]") {
		t.Errorf("Read = %q", got)
	}
	if got := f.expectOK("Read", map[string]any{"file_path": filepath.Join(f.root, "a.txt"), "offset": 2, "limit": 1}); got != "     2\ttwo\n(2 more lines; continue with offset 3)\n" {
		t.Errorf("Read offset 2 limit 1 = %q", got)
	}
	f.expectOK("Read", map[string]any{"file_path": "empty.txt"})
	f.expectErr("Read", map[string]any{"file_path": "dir"}, "is a directory")
	f.expectErr("Read", map[string]any{"file_path": "bin.dat"}, "binary")
	f.expectErr("Read", map[string]any{"file_path": "nope.txt"}, "does not exist")
	f.expectErr("Read", map[string]any{"file_path": 5}, `argument "file_path"`)

	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	f.write("dot.png", buf.String())
	res := f.w.Call(t.Context(), "Read", json.RawMessage(`{"file_path":"dot.png"}`))
	var block struct{ Type, Data, MimeType string }
	if err := json.Unmarshal(res.Content[0], &block); err != nil || block.Type != "image" || block.MimeType != "image/png" || block.Data != base64.StdEncoding.EncodeToString(buf.Bytes()) {
		t.Errorf("Read png = %s", res.Content[0])
	}
}

func TestWriteEdit(t *testing.T) {
	f := newFixture(t, nil)
	if got := f.expectOK("Write", map[string]any{"file_path": "deep/er/f.txt", "content": "a b a\n"}); !strings.HasPrefix(got, "Created") {
		t.Errorf("Write = %q", got)
	}
	if err := os.Chmod(filepath.Join(f.root, "deep/er/f.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.expectErr("Edit", map[string]any{"file_path": "deep/er/f.txt", "old_string": "zzz", "new_string": "y"}, "0 matches")
	f.expectErr("Edit", map[string]any{"file_path": "deep/er/f.txt", "old_string": "a", "new_string": "y"}, "matches 2 places")
	f.expectOK("Edit", map[string]any{"file_path": "deep/er/f.txt", "old_string": "b", "new_string": "B"})
	f.expectOK("Edit", map[string]any{"file_path": "deep/er/f.txt", "old_string": "a", "new_string": "c", "replace_all": true})
	data, err := os.ReadFile(filepath.Join(f.root, "deep/er/f.txt"))
	if err != nil || string(data) != "c B c\n" {
		t.Errorf("file = %q, %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(f.root, "deep/er/f.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("atomic replace lost the mode: %v", fi.Mode())
	}
	f.expectErr("Write", map[string]any{"file_path": "deep"}, `"content" is required`)
	f.expectErr("Write", map[string]any{"file_path": "deep", "content": "x"}, "is a directory")
	ents, _ := os.ReadDir(filepath.Join(f.root, "deep/er"))
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

func TestGlob(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.go", "")
	f.write("x/b.go", "")
	f.write("x/y/c.go", "")
	f.write("x/y/c.txt", "")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(f.root, "x/b.go"), old, old); err != nil {
		t.Fatal(err)
	}
	got := f.expectOK("Glob", map[string]any{"pattern": "**/*.go"})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 3 || lines[2] != filepath.Join(f.root, "x/b.go") {
		t.Errorf("Glob **/*.go = %q (want 3, oldest last)", lines)
	}
	if got := f.expectOK("Glob", map[string]any{"pattern": "*.{go,txt}", "path": "x/y"}); strings.Count(got, "\n") != 2 {
		t.Errorf("Glob with path and braces = %q", got)
	}
	if got := f.expectOK("Glob", map[string]any{"pattern": "*.rs"}); got != "No files found" {
		t.Errorf("Glob no match = %q", got)
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.go", "package a\nfunc Foo() {}\n// foo\nfunc Bar() {}\n")
	f.write("b.txt", "Foo\nfoo\n")
	// files_with_matches lists the newest first.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(f.root, "b.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "Foo"}, f.root + "/a.go\n" + f.root + "/b.txt"},
		{map[string]any{"pattern": "Foo", "type": "go"}, f.root + "/a.go"},
		{map[string]any{"pattern": "foo", "-i": true, "output_mode": "count", "glob": "*.txt"}, f.root + "/b.txt:2"},
		{map[string]any{"pattern": "Bar", "output_mode": "content", "-B": 1, "path": "a.go"}, f.root + "/a.go-3-// foo\n" + f.root + "/a.go:4:func Bar() {}"},
		{map[string]any{"pattern": "^func", "output_mode": "content", "-n": false, "head_limit": 1, "path": "a.go"}, f.root + "/a.go:func Foo() {}\n(stopped at head_limit=1; continue with offset 1)"},
		{map[string]any{"pattern": "^func", "output_mode": "content", "-n": false, "head_limit": 1, "offset": 1, "path": "a.go"}, f.root + "/a.go:func Bar() {}"},
		{map[string]any{"pattern": `Foo\(\) \{\}\n// foo`, "multiline": true, "output_mode": "content", "path": "a.go"}, f.root + "/a.go:2:func Foo() {}\n" + f.root + "/a.go:3:// foo"},
		{map[string]any{"pattern": "nothing here"}, "No matches found"},
	}
	for _, tt := range tests {
		if got := f.expectOK("Grep", tt.args); got != tt.want {
			t.Errorf("Grep(%v) =\n%s\nwant\n%s", tt.args, got, tt.want)
		}
	}
	f.expectErr("Grep", map[string]any{"pattern": "(?=x)"}, "RE2")
	f.expectErr("Grep", map[string]any{"pattern": "x", "type": "cobol"}, "unknown type")
}

func TestBashBasics(t *testing.T) {
	t.Setenv("KILN_WS_PASS", "passed-through")
	t.Setenv("KILN_WS_HIDE", "hidden-value")
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Env = []string{"KILN_WS_PASS"}; c.MaxOutput = 2000 })
	got := f.expectErr("Bash", map[string]any{"command": "pwd; env; exit 3", "description": "show env"}, "exit code: 3")
	if !strings.Contains(got, f.root+"\n") || !strings.Contains(got, "KILN_WS_PASS=passed-through") || strings.Contains(got, "hidden-value") || !strings.HasPrefix(got, "exit code: 3\n") {
		t.Errorf("Bash = %s", got)
	}
	got = f.expectOK("Bash", map[string]any{"command": "head -c 10000 /dev/zero | tr '\\0' a"})
	if !strings.Contains(got, "bytes cut to keep the output within the workspace's 2000-byte output budget") || len(got) > 2300 {
		t.Errorf("max_output not applied: %d bytes", len(got))
	}
	f.expectErr("Bash", map[string]any{"command": "sudo rm -rf /"}, "`sudo`")
	f.expectErr("Bash", map[string]any{"command": "ls && dd if=/dev/zero of=/dev/sda"}, "`dd` to a device")
	f.expectOK("Bash", map[string]any{"command": "echo sudo is only a word"})
	f.expectErr("Bash", map[string]any{"command": "true", "timeout": 3600000}, "over this workspace's maximum of 60000 ms")
}

func TestVerifyGo(t *testing.T) {
	// A fresh build cache compiles the standard library first.
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Timeout, c.Bash.MaxTimeout = 5*time.Minute, 5*time.Minute })
	f.write("go.mod", "module example.com/m\n\ngo 1.22\n")
	// copylocks is in go vet but not in go test's vet subset, so the
	// test still builds.
	f.write("m.go", "package m\n\nimport \"sync\"\n\nfunc Hello() string { return \"bye\" }\n\nfunc Lock(m sync.Mutex) {}\n")
	f.write("m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello() != \"hello\" {\n\t\tt.Fatal(\"planted failure\")\n\t}\n}\n")
	f.write("ugly.go", "package m\nfunc  Ugly( ) {}\n")
	got := f.expectErr("run_tests", map[string]any{}, "exit code: 1")
	if !strings.HasPrefix(got, "run_tests (Go project): FAILED, exit code: 1\n") || !strings.Contains(got, "planted failure") {
		t.Errorf("run_tests = %s", got)
	}
	got = f.expectErr("run_lint", map[string]any{}, "FAILED")
	if !strings.Contains(got, "FAILED") || !strings.Contains(got, "passes lock by value") || !strings.Contains(got, "ugly.go") {
		t.Errorf("run_lint = %s", got)
	}
	if got := f.expectOK("run_typecheck", map[string]any{}); !strings.Contains(got, "passed") {
		t.Errorf("run_typecheck = %s", got)
	}
	// Post-edit feedback names the edited file's findings.
	got = f.expectOK("Edit", map[string]any{"file_path": "ugly.go", "old_string": "func  Ugly( ) {}", "new_string": "func Ugly() { x := 1 }"})
	if !strings.Contains(got, "Post-edit checks") || !strings.Contains(got, "declared and not used") {
		t.Errorf("Edit feedback = %s", got)
	}
	if got := f.expectOK("Write", map[string]any{"file_path": "ugly.go", "content": "package m\n\nfunc Ugly() {}\n"}); strings.Contains(got, "Post-edit") {
		t.Errorf("clean Write got feedback: %s", got)
	}
}

// TestVerifyUnknown: no project file, no language; a Python project
// whose python lacks pytest is told so. Hermetic: the project's .venv is
// a python that has no pytest whatever the machine has installed.
func TestVerifyUnknown(t *testing.T) {
	f := newFixture(t, nil)
	f.expectErr("run_tests", map[string]any{}, "no go.mod, package.json or Python project file")
	f.write("pyproject.toml", "[project]\nname='x'\n")
	f.write(".venv/bin/python", "#!/bin/sh\n# a python with no modules at all\nexit 1\n")
	if err := os.Chmod(filepath.Join(f.root, ".venv/bin/python"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := f.expectErr("run_tests", map[string]any{}, "pytest is not installed for "+filepath.Join(f.root, ".venv/bin/python"))
	if !strings.HasPrefix(got, "run_tests (Python project): FAILED, exit code: 127") {
		t.Errorf("python run_tests = %s", got)
	}
}

func TestSnapshots(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.txt", "A")
	f.write("d/b.txt", "B")
	if err := os.Symlink("a.txt", filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	f.expectOK("snapshot_create", map[string]any{"name": "s1"})
	f.expectErr("snapshot_create", map[string]any{"name": "s1"}, "exists already")
	f.write("a.txt", "changed")
	f.write("new.txt", "N")
	if got := f.expectOK("snapshot_list", map[string]any{}); !strings.HasPrefix(got, "s1\t") {
		t.Errorf("snapshot_list = %q", got)
	}
	f.expectOK("snapshot_restore", map[string]any{"id": "s1"})
	for p, want := range map[string]string{"a.txt": "A", "d/b.txt": "B", "link": "A"} {
		if got, err := os.ReadFile(filepath.Join(f.root, p)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v", p, got, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.root, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt survived the restore")
	}
	if l, _ := os.Readlink(filepath.Join(f.root, "link")); l != "a.txt" {
		t.Errorf("symlink restored as %q", l)
	}
	f.expectErr("snapshot_restore", map[string]any{"id": "../x"}, "not a snapshot id")
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.ReadOnly = true })
	for _, tool := range f.w.Tools() {
		if tool.writes {
			t.Errorf("readonly workspace offers %s", tool.Name)
		}
	}
	f.expectErr("Write", map[string]any{"file_path": "x", "content": "y"}, "read-only")
	got := f.expectErr("Bash", map[string]any{"command": "touch x"}, "exit code: 1")
	if !strings.Contains(got, "Permission denied") {
		t.Errorf("Bash wrote in a readonly root: %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.root, "x")); err == nil {
		t.Error("file created in a readonly root")
	}
}

func TestNoLandlockRefuses(t *testing.T) {
	saved := landlockABI
	landlockABI = func() int { return 0 } // plays a kernel without Landlock
	defer func() { landlockABI = saved }()
	_, err := Open(&config.Backend{Name: "repo", Workspace: &config.Workspace{Root: t.TempDir(), StateDir: t.TempDir()}}, nil)
	if err == nil || !strings.Contains(err.Error(), "bash.unconfined: true") {
		t.Fatalf("Open without Landlock = %v, want a refusal naming bash.unconfined", err)
	}
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Unconfined = true })
	// unconfined: true runs Bash without Landlock: it can read outside.
	if got := f.expectOK("Bash", map[string]any{"command": "cat " + f.secret}); !strings.Contains(got, secretText) {
		t.Errorf("unconfined Bash = %s", got)
	}
}
