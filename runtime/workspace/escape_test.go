package workspace

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/config"
)

// treeDigest fingerprints a folder (names, kinds, contents, link
// targets), to prove nothing outside the root was written, created or
// deleted.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", p, d.Type())
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintln(h, l)
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestEscapes is the escape suite: every case must be refused or fail,
// no result may carry the secret outside, and the outside folder must be
// unchanged at the end.
func TestEscapes(t *testing.T) {
	f := newFixture(t, nil)
	before := treeDigest(t, f.outside)
	must := func(t *testing.T, text string, isErr bool, wantErr bool, want string) {
		t.Helper()
		if strings.Contains(text, secretText) {
			t.Fatalf("the secret outside the root came back: %s", text)
		}
		if wantErr && !isErr {
			t.Fatalf("not refused: %s", text)
		}
		if !strings.Contains(text, want) {
			t.Fatalf("result %q lacks %q", text, want)
		}
	}
	rel, _ := filepath.Rel(f.root, f.secret)
	if err := os.Symlink(f.outside, filepath.Join(f.root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret, filepath.Join(f.root, "secret-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop-b", filepath.Join(f.root, "loop-a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop-a", filepath.Join(f.root, "loop-b")); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a/", 2500) + "x"
	cases := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"../ relative", "Read", map[string]any{"file_path": rel}, "outside the workspace root"},
		{"../ inside then out", "Read", map[string]any{"file_path": "a/../../outside/secret.txt"}, "outside the workspace root"},
		{"absolute outside", "Read", map[string]any{"file_path": f.secret}, "outside the workspace root"},
		{"absolute /etc/passwd", "Read", map[string]any{"file_path": "/etc/passwd"}, "outside the workspace root"},
		{"write ../", "Write", map[string]any{"file_path": "../outside/new.txt", "content": "x"}, "outside the workspace root"},
		{"edit absolute outside", "Edit", map[string]any{"file_path": f.secret, "old_string": "TOP", "new_string": "x"}, "outside the workspace root"},
		{"symlinked folder read", "Read", map[string]any{"file_path": "out/secret.txt"}, "symlink"},
		{"symlinked folder write", "Write", map[string]any{"file_path": "out/new.txt", "content": "x"}, "symlink"},
		{"symlinked file read", "Read", map[string]any{"file_path": "secret-link"}, "symlink"},
		{"symlinked file edit", "Edit", map[string]any{"file_path": "secret-link", "old_string": "TOP", "new_string": "x"}, "symlink"},
		{"glob through symlink", "Glob", map[string]any{"pattern": "*", "path": "out"}, "symlink"},
		{"grep through symlink", "Grep", map[string]any{"pattern": "SECRET", "path": "out"}, "symlink"},
		{"grep outside", "Grep", map[string]any{"pattern": "SECRET", "path": f.outside}, "outside the workspace root"},
		{"symlink loop", "Read", map[string]any{"file_path": "loop-a"}, "loop"},
		{"NUL byte", "Read", map[string]any{"file_path": "a\x00/../../outside/secret.txt"}, "NUL"},
		{"NUL byte write", "Write", map[string]any{"file_path": "ok\x00.txt", "content": "x"}, "NUL"},
		{"very long path", "Read", map[string]any{"file_path": long}, "longer than the 4096"},
		{"very long name", "Write", map[string]any{"file_path": strings.Repeat("n", 300), "content": "x"}, "file name too long"},
		{"non-UTF-8 outside", "Write", map[string]any{"file_path": "../outside/\xff\xfe", "content": "x"}, "outside the workspace root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, isErr := f.call(c.tool, c.args)
			must(t, text, isErr, true, c.want)
		})
	}
	t.Run("grep and glob of the root skip symlinks out", func(t *testing.T) {
		text, _ := f.call("Grep", map[string]any{"pattern": "SECRET", "output_mode": "content"})
		must(t, text, false, false, "No matches")
		text, _ = f.call("Glob", map[string]any{"pattern": "**/secret*"})
		must(t, text, false, false, "secret-link") // the link itself, inside
	})
	t.Run("non-UTF-8 name inside works", func(t *testing.T) {
		name := "caf\xe9.txt"
		f.expectOK("Write", map[string]any{"file_path": name, "content": "latin-1 name\n"})
		if got := f.expectOK("Read", map[string]any{"file_path": name}); !strings.Contains(got, "latin-1 name") {
			t.Errorf("Read = %q", got)
		}
	})
	t.Run("symlink swapped in a tight loop", func(t *testing.T) { swapRace(t, f) })
	t.Run("bash", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		bashCases := []struct{ name, cmd string }{
			{"cat", "cat " + f.secret},
			{"cat through symlink", "cat out/secret.txt"},
			{"cp", "cp " + f.secret + " copied.txt && cat copied.txt"},
			{"> redirection", "echo x > " + filepath.Join(f.outside, "made.txt")},
			{">> append", "echo x >> " + f.secret},
			{"ln -s then read", "ln -s " + f.secret + " l2 && cat l2"},
			{"rm", "rm -f " + f.secret},
			{"mv", "mv " + f.secret + " here.txt"},
			{"mkdir", "mkdir " + filepath.Join(f.outside, "newdir")},
			{"kiln's environment", fmt.Sprintf("cat /proc/%d/environ", os.Getpid())},
			{"network connect", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED", port)},
		}
		for _, c := range bashCases {
			t.Run(c.name, func(t *testing.T) {
				text, _ := f.call("Bash", map[string]any{"command": c.cmd})
				if strings.Contains(text, secretText) || strings.Contains(text, "CONNECTED") || strings.HasSuffix(text, "exit code: 0") {
					t.Fatalf("Bash %q got out: %s", c.cmd, text)
				}
			})
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("the listener accepted %d connections from Bash", n)
		}
	})
	if after := treeDigest(t, f.outside); after != before {
		t.Errorf("the folder outside the root changed")
	}
	if _, err := os.Stat(f.secret); err != nil {
		t.Errorf("the secret was removed: %v", err)
	}
}

// swapRace flips "swap" between a folder inside and a symlink to the
// outside folder (renameat2 RENAME_EXCHANGE, atomic) while Read and Write
// go through it 10,000 times: no read may see the secret and no write may
// land outside.
func swapRace(t *testing.T, f *fixture) {
	inside := filepath.Join(f.root, "swap")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inside, "secret.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(f.root, "swap-other")
	if err := os.Symlink(f.outside, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err == nil {
				swaps.Add(1)
			}
		}
	}()
	var insideReads, refused int
	for i := range 10000 {
		tool, args := "Read", map[string]any{"file_path": "swap/secret.txt"}
		if i%10 == 9 {
			tool, args = "Write", map[string]any{"file_path": "swap/w.txt", "content": "x"}
		}
		text, isErr := f.call(tool, args)
		if strings.Contains(text, secretText) {
			close(stop)
			wg.Wait()
			t.Fatalf("try %d: the secret leaked through the swapped symlink: %s", i, text)
		}
		switch {
		case isErr:
			refused++
		case tool == "Read":
			insideReads++
		}
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(f.outside, "w.txt")); err == nil {
		t.Fatal("a Write landed outside the root through the swapped symlink")
	}
	t.Logf("10000 tries, %d swaps: %d refused, %d read the inside file", swaps.Load(), refused, insideReads)
	if swaps.Load() == 0 || refused == 0 {
		t.Errorf("the race never happened (swaps %d, refused %d); the test proves nothing", swaps.Load(), refused)
	}
}

// TestNetworkAllowed shows network: true lifts the restriction the escape
// suite checks.
func TestNetworkAllowed(t *testing.T) {
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Network = true })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	got := f.expectOK("Bash", map[string]any{"command": fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED", ln.Addr().(*net.TCPAddr).Port)})
	if !strings.Contains(got, "CONNECTED") {
		t.Errorf("network: true could not connect: %s", got)
	}
}

func TestResolve(t *testing.T) {
	f := newFixture(t, nil)
	f.write("d/file.txt", "x")
	if err := os.Symlink("d", filepath.Join(f.root, "inlink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{".", "."}, {"d/file.txt", "d/file.txt"}, {f.root + "/d/../d/file.txt", "d/file.txt"},
		{"inlink/file.txt", "inlink/file.txt"}, {"new/dir/f", "new/dir/f"}, {"d/file.txt/x", "d/file.txt/x"},
	}
	for _, tt := range tests {
		got, err := f.w.root.Resolve(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "..", "../x", "/", f.outside, "a\x00b"} {
		if got, err := f.w.root.Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", bad, got)
		}
	}
}

// TestNoOpenat2Fallback runs the file tools as on a kernel without
// openat2: opens walk components with O_NOFOLLOW, so files inside still
// work and every symlink on the way is refused.
func TestNoOpenat2Fallback(t *testing.T) {
	f := newFixture(t, nil)
	f.w.root.beneath = false
	f.write("d/a.txt", "inside\n")
	if err := os.Symlink(f.outside, filepath.Join(f.root, "out")); err != nil {
		t.Fatal(err)
	}
	if got := f.expectOK("Read", map[string]any{"file_path": "d/a.txt"}); !strings.Contains(got, "inside") {
		t.Errorf("Read = %q", got)
	}
	f.expectOK("Write", map[string]any{"file_path": "d/e/b.txt", "content": "x"})
	f.expectOK("Edit", map[string]any{"file_path": "d/e/b.txt", "old_string": "x", "new_string": "y"})
	// Past the resolver (as after a swap), the walk itself refuses links.
	if _, err := f.w.root.openBeneath("out/secret.txt", unix.O_RDONLY, 0); err == nil {
		t.Fatal("the O_NOFOLLOW walk followed a symlink out")
	}
	if _, err := f.w.root.openBeneath("d/../../outside/secret.txt", unix.O_RDONLY, 0); err == nil {
		t.Fatal("the O_NOFOLLOW walk followed ..")
	}
}

// TestOpenBeneath checks the kernel-side guard alone, without the
// resolver in front: what a swap after Resolve would present.
func TestOpenBeneath(t *testing.T) {
	f := newFixture(t, nil)
	if !f.w.root.beneath {
		t.Skip("this kernel has no openat2; TestNoOpenat2Fallback covers the walk")
	}
	if err := os.Symlink(f.outside, filepath.Join(f.root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret, filepath.Join(f.root, "abs")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out/secret.txt", "abs", "../outside/secret.txt", f.secret} {
		if _, err := f.w.root.openBeneath(p, unix.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
			t.Errorf("openBeneath(%q) = %v, want ErrOutside", p, err)
		}
	}
}
