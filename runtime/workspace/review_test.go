package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// TestEditLargeFileKeepsItWhole edits a file larger than Read loads: the
// edit must not write back only the part that was read.
func TestEditLargeFileKeepsItWhole(t *testing.T) {
	f := newFixture(t, nil)
	body := bytes.Repeat([]byte("0123456789abcdef\n"), readMaxBytes/17+1000)
	data := append([]byte("HEAD\n"), body...)
	data = append(data, "TAIL\n"...)
	p := filepath.Join(f.root, "big.txt")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr := f.call("Edit", map[string]any{"file_path": "big.txt", "old_string": "HEAD", "new_string": "head"})
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if isErr {
		if !bytes.Equal(got, data) {
			t.Fatalf("Edit failed (%s) and changed the file: %d bytes, want %d", text, len(got), len(data))
		}
		if !strings.Contains(text, "Bash") {
			t.Errorf("Edit error %q does not say what to use instead", text)
		}
		return
	}
	want := append([]byte("head\n"), data[5:]...)
	if !bytes.Equal(got, want) {
		t.Fatalf("Edit of a %d-byte file left %d bytes (ends %q)", len(data), len(got), got[max(0, len(got)-10):])
	}
}

// TestGlobBracesBounded gives Glob and Grep a pattern of 20 {a,b} groups:
// expanded up front that is a million patterns (thirty groups, a
// billion, took kiln's memory), for a tree of one file.
func TestGlobBracesBounded(t *testing.T) {
	f := newFixture(t, nil)
	f.write("ab.txt", "x\n")
	pat := strings.Repeat("{a,b}", 20) + ".txt"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"Glob", map[string]any{"pattern": pat}},
		{"Grep", map[string]any{"pattern": "x", "glob": pat}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		text, _ := f.call(c.tool, c.args)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("%s with %d {a,b} groups allocated %d MiB (answer %q)", c.tool, 20, alloc>>20, cut(text, 200))
		}
	}
	f.expectErr("Glob", map[string]any{"pattern": strings.Repeat("{a,b}", 30)}, "alternatives")
	f.expectErr("Grep", map[string]any{"pattern": "x", "glob": strings.Repeat("{a,b}", 30)}, "alternatives")
	if got := f.expectOK("Glob", map[string]any{"pattern": "{x,a}{b,y}.txt"}); !strings.HasSuffix(got, "ab.txt\n") {
		t.Errorf("Glob {x,a}{b,y}.txt = %q", got)
	}
}

// TestGlobStarsLinear matches many ** segments against a deep path, which
// backtracking tries in exponentially many ways (C(40,12) here): the walk
// must finish, and still find the one file that matches.
func TestGlobStarsLinear(t *testing.T) {
	f := newFixture(t, nil)
	deep := strings.Repeat("a/", 40)
	f.write(deep+"b.txt", "x\n")
	f.write(deep+"c.txt", "x\n")
	pat := strings.Repeat("**/a/", 12) + "**/b.txt"
	if got := f.expectOK("Glob", map[string]any{"pattern": pat}); !strings.HasSuffix(got, "/b.txt\n") || strings.Contains(got, "c.txt") {
		t.Errorf("Glob %s = %q", pat, got)
	}
	if got := f.expectOK("Glob", map[string]any{"pattern": strings.Repeat("**/a/", 12) + "**/nope.txt"}); got != "No files found" {
		t.Errorf("Glob of a name not there = %q", got)
	}
}

// TestStateInsideRootRefused opens a workspace whose root holds kiln's
// state folder, as root: . beside the default state_dir .kiln does: the
// tools could then read OAuth tokens and change registrations and
// snapshots (snapshot_restore emptied the root, and with it the snapshot
// it was restoring).
func TestStateInsideRootRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		state func(root, base string) string
	}{
		{"below", func(root, _ string) string { return filepath.Join(root, ".kiln", "workspace", "repo") }},
		{"through a symlink", func(root, base string) string {
			if err := os.Symlink(root, filepath.Join(base, "link")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(base, "link", ".kiln", "workspace", "repo")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := config.Workspace{Root: root, MaxOutput: 1000, StateDir: c.state(root, base),
				Bash: config.Bash{Timeout: time.Second, MaxTimeout: time.Second}}
			w, err := Open(&config.Backend{Name: "repo", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
			if err == nil {
				w.Close()
				t.Fatal("Open accepted a state folder inside the root")
			}
			if !strings.Contains(err.Error(), "gateway.state_dir") {
				t.Errorf("Open error %q does not say which setting to change", err)
			}
			if _, err := os.Stat(filepath.Join(root, ".kiln")); err == nil {
				t.Errorf("Open created the state folder inside the root before refusing")
			}
		})
	}
}

// TestOutBufBounded writes a runaway command's output through a shell's
// buffer in the pipe-sized pieces exec copies: what it keeps stays the
// newest outBufMax bytes, and each piece past the limit must not copy
// the whole buffer again (that allocated 8 MiB per 32 KiB piece, 14 GiB
// for 64 MiB of output).
func TestOutBufBounded(t *testing.T) {
	o := &outBuf{}
	piece := make([]byte, 32<<10)
	const total = 8 * outBufMax
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < total/len(piece); i++ {
		for j := range piece {
			piece[j] = byte('a' + (i+j)%26)
		}
		o.Write(piece)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 4*outBufMax {
		t.Errorf("writing %d MiB allocated %d MiB", total>>20, alloc>>20)
	}
	t.Logf("writing %d MiB allocated %d MiB", total>>20, alloc>>20)
	text, next, lost := o.since(0)
	if next != total || lost != total-outBufMax || len(text) != outBufMax {
		t.Fatalf("since(0) = %d bytes, next %d, lost %d; want %d, %d, %d", len(text), next, lost, outBufMax, total, total-outBufMax)
	}
	last := total/len(piece) - 1
	for j := range 26 {
		if want := byte('a' + (last+len(piece)-26+j)%26); text[len(text)-26+j] != want {
			t.Fatalf("the newest bytes are %q, want the last piece's", text[len(text)-26:])
		}
	}
	if text, next2, lost := o.since(total - 5); len(text) != 5 || next2 != total || lost != 0 {
		t.Errorf("since(total-5) = %q, %d, %d", text, next2, lost)
	}
	o.Write([]byte("xyz"))
	if text, _, lost := o.since(total); text != "xyz" || lost != 0 {
		t.Errorf("since after a write = %q, lost %d", text, lost)
	}
	small := &outBuf{}
	small.Write([]byte("hello "))
	small.Write([]byte("world"))
	if text, next, lost := small.since(2); text != "llo world" || next != 11 || lost != 0 {
		t.Errorf("small since(2) = %q, %d, %d", text, next, lost)
	}
}

// TestBackgroundShellsCapped starts background shells past the cap, as a
// program looping over Bash could: each holds a process and up to
// outBufMax of output, and one nobody reads was kept until kiln exits.
func TestBackgroundShellsCapped(t *testing.T) {
	f := newFixture(t, nil)
	for i := range maxBackgroundShells {
		f.expectOK("Bash", map[string]any{"command": "echo done " + strconv.Itoa(i), "run_in_background": true})
	}
	// All finished and unread: a new one takes the place of the oldest.
	for _, id := range f.w.backgroundIDs() {
		<-f.w.shell(id).done
	}
	f.expectOK("Bash", map[string]any{"command": "sleep 60", "run_in_background": true})
	if got := len(f.w.backgroundIDs()); got != maxBackgroundShells {
		t.Fatalf("%d background shells tracked, want %d", got, maxBackgroundShells)
	}
	f.expectErr("BashOutput", map[string]any{"bash_id": "bash_1"}, "no shell")
	f.expectOK("BashOutput", map[string]any{"bash_id": "bash_2"})
	for range maxBackgroundShells - 1 {
		f.expectOK("Bash", map[string]any{"command": "sleep 60", "run_in_background": true})
	}
	text := f.expectErr("Bash", map[string]any{"command": "sleep 60", "run_in_background": true}, "KillShell")
	if !strings.Contains(text, strconv.Itoa(maxBackgroundShells)) {
		t.Errorf("refusal %q does not say how many run", text)
	}
	// A foreground command still runs, and killing one frees a place.
	f.expectOK("Bash", map[string]any{"command": "true"})
	f.expectOK("KillShell", map[string]any{"shell_id": f.w.backgroundIDs()[0]})
	f.expectOK("Bash", map[string]any{"command": "sleep 60", "run_in_background": true})
}

// backgroundIDs lists the tracked background shells, oldest first.
func (w *Workspace) backgroundIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ss []*shell
	for _, s := range w.shells {
		if s.background {
			ss = append(ss, s)
		}
	}
	slices.SortFunc(ss, func(a, b *shell) int { return a.seq - b.seq })
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.id
	}
	return ids
}

// TestReadLargeFileInRanges reads a log longer than Read loads at once:
// offset must reach its last lines, and the count of lines left must be
// the file's (only the first 64 MiB were read: the tail was reported
// "past its end").
func TestReadLargeFileInRanges(t *testing.T) {
	f := newFixture(t, nil)
	const n = 5_000_000 // 14 bytes a line: 70 MB
	var b bytes.Buffer
	b.Grow(n * 14)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %08d\n", i)
	}
	if b.Len() <= readMaxBytes {
		t.Fatalf("the file is %d bytes, not over %d", b.Len(), readMaxBytes)
	}
	if err := os.WriteFile(filepath.Join(f.root, "big.log"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := f.expectOK("Read", map[string]any{"file_path": "big.log", "offset": n - 1, "limit": 5}),
		fmt.Sprintf("%6d\tline %08d\n%6d\tline %08d\n", n-1, n-1, n, n); got != want {
		t.Errorf("Read at the end = %q, want %q", got, want)
	}
	if got, want := f.expectOK("Read", map[string]any{"file_path": "big.log", "limit": 1}),
		fmt.Sprintf("     1\tline 00000001\n(%d more lines; continue with offset 2)\n", n-1); got != want {
		t.Errorf("Read of the first line = %q, want %q", got, want)
	}
	if got, want := f.expectOK("Read", map[string]any{"file_path": "big.log", "offset": n + 1}),
		fmt.Sprintf("(the file has %d lines; offset %d is past its end)", n, n+1); got != want {
		t.Errorf("Read past the end = %q, want %q", got, want)
	}
}

// TestHugeTimeoutRefused asks for a timeout whose nanoseconds overflow:
// it wrapped to a negative duration under the maximum, and the command
// was killed at once as "timed out".
func TestHugeTimeoutRefused(t *testing.T) {
	f := newFixture(t, nil)
	f.expectErr("Bash", map[string]any{"command": "echo hi", "timeout": int64(1) << 52}, "maximum")
	f.write("go.mod", "module m\n\ngo 1.21\n")
	f.write("m.go", "package m\n")
	if text, isErr := f.call("run_typecheck", map[string]any{"timeout": int64(1) << 52}); isErr || strings.Contains(text, "timed out") {
		t.Errorf("run_typecheck with a huge timeout = %q (isError %v), want it run under max_timeout", text, isErr)
	}
}

// TestWriteThroughInsideSymlinks edits and reads files through symlinks
// that stay inside the root (CLAUDE.md -> AGENTS.md): the target changes
// and the link stays a link. Write and Edit replaced the link with a
// copy, leaving the target as it was, and Read refused a link with an
// absolute target as leading outside.
func TestWriteThroughInsideSymlinks(t *testing.T) {
	f := newFixture(t, nil)
	f.write("docs/AGENTS.md", "rules: one\n")
	if err := os.Symlink("docs/AGENTS.md", filepath.Join(f.root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.root, "docs", "AGENTS.md"), filepath.Join(f.root, "abs.md")); err != nil {
		t.Fatal(err)
	}
	f.expectOK("Edit", map[string]any{"file_path": "CLAUDE.md", "old_string": "one", "new_string": "two"})
	if got := f.expectOK("Read", map[string]any{"file_path": "abs.md"}); !strings.Contains(got, "rules: two") {
		t.Errorf("Read through the absolute link = %q", got)
	}
	f.expectOK("Write", map[string]any{"file_path": "abs.md", "content": "rules: three\n"})
	data, err := os.ReadFile(filepath.Join(f.root, "docs", "AGENTS.md"))
	if err != nil || string(data) != "rules: three\n" {
		t.Errorf("the target holds %q (%v), want the edits", data, err)
	}
	for _, l := range []string{"CLAUDE.md", "abs.md"} {
		if fi, err := os.Lstat(filepath.Join(f.root, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink (%v)", l, err)
		}
	}
}

// TestSearchThroughInsideSymlinks gives Grep a symlinked file and Glob a
// folder linked by absolute path, both inside the root: Grep answered
// "not a directory" and Glob "leads outside".
func TestSearchThroughInsideSymlinks(t *testing.T) {
	f := newFixture(t, nil)
	f.write("docs/AGENTS.md", "rules: one\n")
	if err := os.Symlink("docs/AGENTS.md", filepath.Join(f.root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.root, "docs"), filepath.Join(f.root, "abs-docs")); err != nil {
		t.Fatal(err)
	}
	if got := f.expectOK("Grep", map[string]any{"pattern": "rules", "path": "CLAUDE.md", "output_mode": "content"}); !strings.Contains(got, "rules: one") {
		t.Errorf("Grep of the linked file = %q", got)
	}
	if got := f.expectOK("Glob", map[string]any{"pattern": "*.md", "path": "abs-docs"}); !strings.Contains(got, "AGENTS.md") {
		t.Errorf("Glob of the linked folder = %q", got)
	}
}

// TestConcurrentEditsAllLand runs Edits of one file side by side, as
// Promise.all in a program does: each read the file, replaced its text
// and renamed its copy over the file, so all reported success and the
// last rename undid the others.
func TestConcurrentEditsAllLand(t *testing.T) {
	f := newFixture(t, nil)
	const n = 32
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key%02d\n", i)
	}
	f.write("f.txt", b.String())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			raw, _ := json.Marshal(map[string]any{"file_path": "f.txt", "old_string": fmt.Sprintf("key%02d", i), "new_string": fmt.Sprintf("val%02d", i)})
			if res := f.w.Call(t.Context(), "Edit", raw); res.IsError {
				t.Errorf("Edit %d: %s", i, res.TextContent())
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(f.root, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if left := strings.Count(string(data), "key"); left > 0 {
		t.Errorf("%d of %d concurrent edits were lost:\n%s", left, n, data)
	}
}
