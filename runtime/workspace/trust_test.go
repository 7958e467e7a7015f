package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/scrub"
)

// The tests of issue 25's defects, one each, on the workspace itself with
// real toolchains (git, go, python3 with pytest); tests/workspace_test.go
// drives the same through a real kiln serve.

// TestGitInBash (defect 1): git reads /etc/gitconfig under Landlock and
// commits get the configured identity.
func TestGitInBash(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t, func(c *config.Workspace) { c.Bash.GitIdentity = config.DefaultGitIdentity })
	f.write("a.txt", "one\n")
	got := f.expectOK("Bash", map[string]any{"command": "git init -q && git add a.txt && git commit -q -m first && git log --format='%an <%ae>' && git status --short"})
	if !strings.Contains(got, config.DefaultGitIdentity) || strings.Contains(got, "Permission denied") {
		t.Errorf("git in Bash = %s", got)
	}
	// Without an identity git refuses the commit, saying why.
	f2 := newFixture(t, nil)
	f2.write("a.txt", "one\n")
	got = f2.expectErr("Bash", map[string]any{"command": "git init -q && git add a.txt && git -c user.useConfigOnly=true commit -q -m first"}, "exit code:")
	if strings.Contains(got, "/etc/gitconfig") {
		t.Errorf("git could not read /etc/gitconfig: %s", got)
	}
}

// TestReadPagesWithinBudget (defect 2): a Read never returns more than
// the budget, ends at a whole line, and its continue offset is the first
// line not shown: paging through a 3,000-line file sees every line once.
func TestReadPagesWithinBudget(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.Budget = 20000 })
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %04d %s\n", i, strings.Repeat("x", 30))
	}
	f.write("big.txt", b.String())
	seen := map[int]int{}
	next := regexp.MustCompile(`continue with offset (\d+)\)\n$`)
	offset, pages := 1, 0
	for {
		got := f.expectOK("Read", map[string]any{"file_path": "big.txt", "offset": offset, "limit": 2000})
		if len(got) > 20000 {
			t.Fatalf("page at offset %d is %d bytes, over the budget", offset, len(got))
		}
		pages++
		for _, l := range strings.Split(got, "\n") {
			if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(l, "\t", 2)[0])); err == nil && strings.Contains(l, "\tline ") {
				seen[n]++
				if want := fmt.Sprintf("line %04d", n); !strings.Contains(l, want) {
					t.Fatalf("line %d shows %q", n, l)
				}
			}
		}
		m := next.FindStringSubmatch(got)
		if m == nil {
			break
		}
		offset, _ = strconv.Atoi(m[1])
	}
	for i := 1; i <= 3000; i++ {
		if seen[i] != 1 {
			t.Fatalf("line %d seen %d times over %d pages", i, seen[i], pages)
		}
	}
	if pages < 3 {
		t.Errorf("%d pages: the budget did not bound a page", pages)
	}
}

// TestGrepAndBashOutputPage (defect 2): Grep content output and
// BashOutput stop at whole lines within the budget and lose nothing.
func TestGrepAndBashOutputPage(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.Budget = 4000 })
	var b strings.Builder
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "match %03d\n", i)
	}
	f.write("m.txt", b.String())
	all := map[string]bool{}
	offset := 0
	for range 100 {
		got := f.expectOK("Grep", map[string]any{"pattern": "match", "output_mode": "content", "offset": offset})
		if len(got) > 4000 {
			t.Fatalf("Grep page is %d bytes", len(got))
		}
		for _, l := range strings.Split(got, "\n") {
			if i := strings.Index(l, "match "); i >= 0 {
				all[l[i:]] = true
			}
		}
		m := regexp.MustCompile(`continue with offset (\d+)\)$`).FindStringSubmatch(got)
		if m == nil {
			break
		}
		offset, _ = strconv.Atoi(m[1])
	}
	if len(all) != 500 {
		t.Fatalf("Grep pages held %d of 500 matches", len(all))
	}
	f.expectOK("Bash", map[string]any{"command": "cat m.txt", "run_in_background": true})
	waitFinished(t, f.w, "bash_1")
	var out strings.Builder
	for page := 0; ; page++ {
		got := f.expectOK("BashOutput", map[string]any{"bash_id": "bash_1"})
		if len(got) > 4000 || page > 100 {
			t.Fatalf("BashOutput page %d is %d bytes", page, len(got))
		}
		out.WriteString(got)
		if !strings.Contains(got, "more output waiting") {
			break
		}
	}
	for i := 1; i <= 500; i++ {
		if strings.Count(out.String(), fmt.Sprintf("match %03d\n", i)) != 1 {
			t.Fatalf("BashOutput lost or repeated line %d:\n%s", i, out.String())
		}
	}
}

// TestEditCRLF (defect 3): old_string as Read shows it matches a CRLF
// file, and the replacement keeps \r\n.
func TestEditCRLF(t *testing.T) {
	f := newFixture(t, nil)
	f.write("w.txt", "first\r\nsecond\r\nthird\r\n")
	if got := f.expectOK("Read", map[string]any{"file_path": "w.txt"}); strings.Contains(got, "\r") {
		t.Fatalf("Read showed \\r: %q", got)
	}
	f.expectOK("Edit", map[string]any{"file_path": "w.txt", "old_string": "first\nsecond", "new_string": "one\ntwo\nthree"})
	f.expectOK("Edit", map[string]any{"file_path": "w.txt", "old_string": "third", "new_string": "four\nfive"})
	data, _ := os.ReadFile(filepath.Join(f.root, "w.txt"))
	if string(data) != "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\n" {
		t.Errorf("CRLF file after Edit = %q", data)
	}
}

// TestEditThroughRedaction (defect 4): an old_string holding the marker
// the scrubber put in Read's output matches the secret; the marker in
// new_string keeps it.
func TestEditThroughRedaction(t *testing.T) {
	f := newFixture(t, nil)
	f.write("conf.py", "password = \"hunter2-hunter2\"\nport = 1\n")
	sc := scrub.New(scrub.Options{})
	shown := sc.String(f.expectOK("Read", map[string]any{"file_path": "conf.py"}))
	line := strings.SplitN(strings.SplitN(shown, "\n", 2)[0], "\t", 2)[1]
	if !strings.Contains(line, "[REDACTED:") {
		t.Fatalf("the scrubber did not hide the password: %q", shown)
	}
	got := f.expectOK("Edit", map[string]any{"file_path": "conf.py", "old_string": line, "new_string": line + "  # rotated yearly"})
	if strings.Contains(got, "hunter2") {
		t.Errorf("Edit's answer holds the secret: %s", got)
	}
	data, _ := os.ReadFile(filepath.Join(f.root, "conf.py"))
	if string(data) != "password = \"hunter2-hunter2\"  # rotated yearly\nport = 1\n" {
		t.Errorf("file after Edit = %q", data)
	}
	f.expectErr("Edit", map[string]any{"file_path": "conf.py", "old_string": "port = 1", "new_string": "port = [REDACTED:assignment]"}, "does not know which secret")
}

// TestOwnMessagesSurviveScrubbing (defect 4): kiln's fixed text around a
// path that looks like a secret's name stays readable after scrubbing.
func TestOwnMessagesSurviveScrubbing(t *testing.T) {
	f := newFixture(t, nil)
	sc := scrub.New(scrub.Options{})
	for _, p := range []string{"/etc/passwd", "secrets/password.txt", "../token", "missing/credentials.json", "/root/.ssh/id_rsa"} {
		for _, tool := range []string{"Read", "Edit", "Write"} {
			args := map[string]any{"file_path": p, "old_string": "a", "new_string": "b", "content": "x"}
			text, isErr := f.call(tool, args)
			if !isErr {
				continue
			}
			if got := sc.String(text); got != text {
				t.Errorf("%s %s: the scrubber changed kiln's message\n%s\n→ %s", tool, p, text, got)
			}
		}
	}
}

// TestSearchIgnores (defect 6): Grep and Glob skip ignored and hidden
// files unless asked, Glob caps at 100 with a note, and the new types
// work.
func TestSearchIgnores(t *testing.T) {
	f := newFixture(t, nil)
	f.write(".gitignore", "node_modules/\n/dist\n*.log\n!keep.log\n")
	f.write("src/app.ts", "export const needle = 1\n")
	f.write("src/.ignore", "gen/\n")
	f.write("src/gen/out.ts", "needle\n")
	f.write("node_modules/lib/index.js", "needle\n")
	f.write("dist/app.js", "needle\n")
	f.write("debug.log", "needle\n")
	f.write("keep.log", "needle\n")
	f.write(".cache/x.txt", "needle\n")
	f.write("Main.kt", "val needle = 1\n")
	got := f.expectOK("Grep", map[string]any{"pattern": "needle"})
	for _, want := range []string{"src/app.ts", "keep.log", "Main.kt"} {
		if !strings.Contains(got, want) {
			t.Errorf("Grep lacks %s:\n%s", want, got)
		}
	}
	for _, skip := range []string{"node_modules", "dist/", "debug.log", ".cache", "gen/out.ts"} {
		if strings.Contains(got, skip) {
			t.Errorf("Grep searched %s:\n%s", skip, got)
		}
	}
	if got := f.expectOK("Grep", map[string]any{"pattern": "needle", "hidden": true}); !strings.Contains(got, ".cache/x.txt") || strings.Contains(got, "node_modules") {
		t.Errorf("Grep hidden = %s", got)
	}
	if got := f.expectOK("Grep", map[string]any{"pattern": "needle", "no_ignore": true}); !strings.Contains(got, "node_modules/lib/index.js") || !strings.Contains(got, "debug.log") {
		t.Errorf("Grep no_ignore = %s", got)
	}
	if got := f.expectOK("Grep", map[string]any{"pattern": "needle", "type": "kotlin"}); !strings.HasSuffix(got, "Main.kt") || strings.Contains(got, "app.ts") {
		t.Errorf("Grep type kotlin = %s", got)
	}
	if got := f.expectOK("Glob", map[string]any{"pattern": "**/*.js"}); got != "No files found" {
		t.Errorf("Glob of ignored files = %s", got)
	}
	for i := range 130 {
		f.write(fmt.Sprintf("many/f%03d.txt", i), "x")
	}
	got = f.expectOK("Glob", map[string]any{"pattern": "many/*.txt"})
	if n := strings.Count(got, "many/f"); n != 100 || !strings.Contains(got, "30 more files match, 130 in all") {
		t.Errorf("Glob showed %d paths:\n%s", n, got[max(0, len(got)-300):])
	}
}

// TestExitIsError (defect 7): a non-zero exit is an error result that
// starts with its code, in Bash and the run_* tools alike.
func TestExitIsError(t *testing.T) {
	f := newFixture(t, nil)
	if got := f.expectErr("Bash", map[string]any{"command": "echo out; exit 3"}, "out"); !strings.HasPrefix(got, "exit code: 3\n") {
		t.Errorf("Bash exit 3 = %q", got)
	}
	if got := f.expectOK("Bash", map[string]any{"command": "echo fine"}); !strings.HasPrefix(got, "exit code: 0\n") {
		t.Errorf("Bash exit 0 = %q", got)
	}
}

// TestFinishedShellsKeepOutput (defects 8, 9): a finished or killed
// background shell keeps its status and unread output; filter anchors
// match each line without its newline.
func TestFinishedShellsKeepOutput(t *testing.T) {
	f := newFixture(t, nil)
	f.expectOK("Bash", map[string]any{"command": "printf 'a1\\nb2\\nc2\\n'; exit 4", "run_in_background": true})
	waitFinished(t, f.w, "bash_1")
	got := f.expectErr("BashOutput", map[string]any{"bash_id": "bash_1", "filter": "2$"}, "exit code: 4")
	if !strings.Contains(got, "b2\nc2\n") || strings.Contains(got, "a1") {
		t.Errorf("filtered BashOutput = %q", got)
	}
	f.expectOK("Bash", map[string]any{"command": "echo before-kill; sleep 60", "run_in_background": true})
	waitOutput(t, f.w, "bash_2", "before-kill")
	f.expectOK("KillShell", map[string]any{"shell_id": "bash_2"})
	got = f.expectErr("BashOutput", map[string]any{"bash_id": "bash_2"}, "killed with KillShell")
	if !strings.Contains(got, "before-kill") {
		t.Errorf("killed shell's output lost: %q", got)
	}
	if got := f.expectErr("BashOutput", map[string]any{"bash_id": "bash_2"}, "status: finished"); strings.Contains(got, "before-kill") {
		t.Errorf("output read twice: %q", got)
	}
}

// TestBackgroundTimeout (defect 10): a background shell ends at its own
// timeout, and may ask for more than max_timeout up to background_max.
func TestBackgroundTimeout(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.Bash.BackgroundMax = time.Hour })
	f.expectOK("Bash", map[string]any{"command": "sleep 30", "run_in_background": true, "timeout": 300})
	waitFinished(t, f.w, "bash_1")
	f.expectErr("BashOutput", map[string]any{"bash_id": "bash_1"}, "ran past its timeout (300ms)")
	// 20 minutes: over max_timeout (1 minute), under background_max.
	f.expectOK("Bash", map[string]any{"command": "true", "run_in_background": true, "timeout": 1200000})
	f.expectErr("Bash", map[string]any{"command": "true", "run_in_background": true, "timeout": 7200000}, "bash.background_max")
	f.expectErr("Bash", map[string]any{"command": "true", "timeout": 1200000}, "bash.max_timeout")
}

// TestAnnotations (defect 11): every tool says what it does to the
// world.
func TestAnnotations(t *testing.T) {
	want := map[string]hints{
		"Read": readOnly, "Glob": readOnly, "Grep": readOnly, "snapshot_list": readOnly, "snapshot_diff": readOnly,
		"Write": rewrites, "Edit": changes, "Bash": changes, "snapshot_restore": rewrites,
	}
	ws := Listed(config.Workspace{})
	for _, tool := range ws {
		raw, _ := json.Marshal(tool)
		var wire struct {
			Annotations map[string]bool `json:"annotations"`
		}
		_ = json.Unmarshal(raw, &wire)
		if len(wire.Annotations) != 4 {
			t.Errorf("%s annotations on the wire = %v, want all four hints", tool.Name, wire.Annotations)
		}
		if h, ok := want[tool.Name]; ok && tool.Annotations != h {
			t.Errorf("%s annotations = %+v, want %+v", tool.Name, tool.Annotations, h)
		}
		if tool.Annotations.ReadOnly && tool.Annotations.Destructive {
			t.Errorf("%s is read-only and destructive", tool.Name)
		}
	}
	for _, tool := range Listed(config.Workspace{Bash: config.Bash{Network: true}}) {
		if tool.Name == "Bash" && !tool.Annotations.OpenWorld {
			t.Error("Bash with network: true is not open-world")
		}
	}
}

// TestPythonRunTests (defect 12): run_tests runs python -m pytest, so the
// tests import the project's package; path and name narrow the run.
func TestPythonRunTests(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import pytest").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-pytest is not installed (.ci/run installs it)")
		}
		t.Skip("Debian's python3-pytest is not installed")
	}
	f := newFixture(t, nil)
	f.write("setup.cfg", "[metadata]\nname = pkg\n")
	f.write("pkg/__init__.py", "def add(a, b):\n    return a + b\n")
	f.write("tests/test_math.py", "from pkg import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_broken():\n    assert add(2, 2) == 5\n")
	got := f.expectErr("run_tests", map[string]any{}, "1 failed, 1 passed")
	if !strings.HasPrefix(got, "run_tests (Python project): FAILED, exit code: 1") {
		t.Errorf("run_tests = %s", got)
	}
	got = f.expectOK("run_tests", map[string]any{"path": "tests/test_math.py", "name": "test_add"})
	if !strings.Contains(got, "1 passed") || !strings.HasPrefix(got, "run_tests (Python project): passed") {
		t.Errorf("run_tests with path and name = %s", got)
	}
	f.expectErr("run_tests", map[string]any{"path": "../elsewhere"}, "outside the workspace root")
}

// TestWarmGoCache (defect 13): opening a Go module's workspace fills
// its build cache in the background.
func TestWarmGoCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed")
	}
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"go.mod": "module m\n\ngo 1.22\n", "m.go": "package m\n\nfunc A() int { return 1 }\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Workspace{Root: root, MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: filepath.Join(base, "state"),
		Bash: config.Bash{Timeout: time.Minute, MaxTimeout: 2 * time.Minute}}
	w, err := Open(&config.Backend{Name: "repo", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.warming.Load() {
		t.Fatal("no warming started for a Go module")
	}
	deadline := time.Now().Add(3 * time.Minute)
	for w.warming.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	ents, _ := os.ReadDir(filepath.Join(cfg.StateDir, "cache", "go-build"))
	if w.warming.Load() || len(ents) == 0 {
		t.Fatalf("build cache after warming: %d entries (still warming: %v)", len(ents), w.warming.Load())
	}
}

// TestSchemasEnforced (defect 14): integers are integers within their
// bounds and unknown arguments are refused naming the known ones.
func TestSchemasEnforced(t *testing.T) {
	f := newFixture(t, nil)
	f.write("a.txt", "x\n")
	f.expectErr("Read", map[string]any{"file_path": "a.txt", "offset": 1.5}, `argument "offset": want a whole number, got 1.5`)
	f.expectErr("Read", map[string]any{"file_path": "a.txt", "offset": 0}, "out of range; give a whole number of at least 1")
	f.expectErr("Read", map[string]any{"file_path": "a.txt", "limit": 0}, "at least 1")
	f.expectErr("Read", map[string]any{"file_path": "a.txt", "pages": "1-2"}, `unknown argument "pages"; Read takes file_path, limit, offset`)
	f.expectErr("Bash", map[string]any{"command": "true", "dangerouslyDisableSandbox": true}, `unknown argument "dangerouslyDisableSandbox"`)
	f.expectErr("Grep", map[string]any{"pattern": "x", "output_mode": "lines"}, "is not one of content, files_with_matches, count")
	f.expectErr("Grep", map[string]any{"pattern": "x", "-C": -1}, "from 0 to 10000")
	for _, tool := range tools {
		var s struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
			Additional *bool `json:"additionalProperties"`
		}
		_ = json.Unmarshal(tool.InputSchema, &s)
		if s.Additional == nil || *s.Additional {
			t.Errorf("%s schema allows unknown properties", tool.Name)
		}
		for name, p := range s.Properties {
			if p.Type == "number" {
				t.Errorf("%s.%s is typed number; the tool takes an integer", tool.Name, name)
			}
		}
	}
}

// TestSnapshotDiffDelete: snapshot_diff shows what changed since a
// snapshot; snapshot_delete removes it.
func TestSnapshotDiffDelete(t *testing.T) {
	f := newFixture(t, nil)
	f.write("keep.txt", "same\n")
	f.write("edit.txt", "a\nb\nc\nd\ne\nf\ng\nh\n")
	f.write("gone.txt", "bye\n")
	f.expectOK("snapshot_create", map[string]any{"name": "s1"})
	f.write("edit.txt", "a\nb\nc\nD\ne\nf\ng\nh\n")
	f.write("new.txt", "hi\n")
	os.Remove(filepath.Join(f.root, "gone.txt"))
	got := f.expectOK("snapshot_diff", map[string]any{"id": "s1"})
	for _, want := range []string{"1 added, 1 removed, 1 changed", "A new.txt", "D gone.txt", "M edit.txt", "@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("snapshot_diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "keep.txt") {
		t.Errorf("snapshot_diff lists an unchanged file:\n%s", got)
	}
	if got := f.expectOK("snapshot_diff", map[string]any{"id": "s1", "path": "new.txt"}); !strings.Contains(got, "1 added, 0 removed, 0 changed") {
		t.Errorf("snapshot_diff with path = %s", got)
	}
	f.expectOK("snapshot_delete", map[string]any{"id": "s1"})
	f.expectErr("snapshot_diff", map[string]any{"id": "s1"}, "no snapshot")
	f.expectErr("snapshot_delete", map[string]any{"id": "s1"}, "no snapshot")
}

func waitFinished(t *testing.T, w *Workspace, id string) {
	t.Helper()
	s := w.shell(id)
	if s == nil {
		t.Fatalf("no shell %s", id)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("shell %s did not finish", id)
	}
}

func waitOutput(t *testing.T, w *Workspace, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := w.shell(id)
		if text, _, _ := s.out.since(0); strings.Contains(text, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shell %s never printed %q", id, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
