package emit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readTree returns every file under dir by slash path, or nil when dir
// does not exist.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// siblings lists the names in dir's parent other than dir itself.
func siblings(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

// swapFixture emits the multi testdata into out (tree "old"), then drops
// two manifests so the next emit makes a different tree ("new"), and
// returns the manifests folder and both trees.
func swapFixture(t *testing.T) (manifests, out string, oldTree, newTree map[string]string) {
	t.Helper()
	manifests = t.TempDir()
	src, err := filepath.Glob(filepath.Join("testdata", "multi", "manifests", "*.json"))
	if err != nil || len(src) < 3 {
		t.Fatalf("multi manifests: %v %v", src, err)
	}
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(manifests, filepath.Base(p)), b)
	}
	out = filepath.Join(t.TempDir(), "generated")
	if err := Run(manifests, out); err != nil {
		t.Fatal(err)
	}
	oldTree = readTree(t, out)
	for _, b := range []string{"myapp", "registry"} {
		if err := os.Remove(filepath.Join(manifests, b+".json")); err != nil {
			t.Fatal(err)
		}
	}
	want := filepath.Join(t.TempDir(), "generated")
	if err := Run(manifests, want); err != nil {
		t.Fatal(err)
	}
	newTree = readTree(t, want)
	if cmp.Equal(oldTree, newTree) {
		t.Fatal("fixture: the two trees are the same")
	}
	return manifests, out, oldTree, newTree
}

// TestKilledEmitLeavesOneTree stops emit where a kill could land: after
// some new files are written, after the new tree is complete, and (on the
// two-rename swap) between the renames. The folder holds the old tree or
// the new one, never a mix, beside at most emit's named work folders; the
// next emit removes those and writes the new tree.
func TestKilledEmitLeavesOneTree(t *testing.T) {
	stages := []struct {
		name  string
		stage func(string) bool
	}{
		{"after the first changed file", func(s string) bool { return strings.HasPrefix(s, "wrote ") }},
		{"after the last changed file", func(s string) bool {
			return s == "wrote searchindex/searchindex.gen.go" || s == "wrote searchindex/index.bin"
		}},
		{"with the new tree built", func(s string) bool { return s == "built" }},
	}
	for _, tc := range stages {
		t.Run(tc.name, func(t *testing.T) {
			manifests, out, oldTree, newTree := swapFixture(t)
			crashAt = tc.stage
			err := Run(manifests, out)
			crashAt = nil
			if !errors.Is(err, errCrashed) {
				t.Fatalf("emit did not reach the simulated kill: %v", err)
			}
			if diff := cmp.Diff(oldTree, readTree(t, out)); diff != "" {
				t.Errorf("after a kill the folder is not the old tree (-old +got):\n%s", diff)
			}
			if got := siblings(t, out); !cmp.Equal(got, []string{".generated.emit-tmp"}) {
				t.Errorf("left beside the folder: %v, want only .generated.emit-tmp", got)
			}
			if err := Run(manifests, out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(newTree, readTree(t, out)); diff != "" {
				t.Errorf("the next emit did not write the new tree (-want +got):\n%s", diff)
			}
			if got := siblings(t, out); len(got) > 0 {
				t.Errorf("the next emit left %v", got)
			}
		})
	}
}

// TestKilledTwoRenameSwapIsRepaired: a kill between the two renames of
// the portable swap leaves the old tree moved aside and the new one
// beside it; the next emit puts a whole tree back and cleans up.
func TestKilledTwoRenameSwapIsRepaired(t *testing.T) {
	manifests, out, oldTree, newTree := swapFixture(t)
	tmp, old := workDirs(out)
	if err := seed(out, tmp); err != nil {
		t.Fatal(err)
	}
	crashAt = func(s string) bool { return s == "moved aside" }
	err := swapTwoRenames(out, tmp, old)
	crashAt = nil
	if !errors.Is(err, errCrashed) {
		t.Fatalf("swap did not reach the simulated kill: %v", err)
	}
	if diff := cmp.Diff(oldTree, readTree(t, old)); diff != "" {
		t.Fatalf("the old tree was not moved aside whole (-want +got):\n%s", diff)
	}
	if err := recoverSwap(out, tmp, old); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(oldTree, readTree(t, out)); diff != "" {
		t.Errorf("recovery did not restore the old tree (-want +got):\n%s", diff)
	}
	if err := Run(manifests, out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(newTree, readTree(t, out)); diff != "" {
		t.Errorf("emit after recovery (-want +got):\n%s", diff)
	}
	if got := siblings(t, out); len(got) > 0 {
		t.Errorf("left beside the folder: %v", got)
	}
}

// TestFailedEmitCleansUp: an ordinary failure (not a kill) removes the
// work folder at once.
func TestFailedEmitCleansUp(t *testing.T) {
	out := filepath.Join(t.TempDir(), "generated")
	writeFile(t, filepath.Join(out, "kiln.gen.go"), []byte("// hand\n"))
	// A generated path that is a folder in the current tree cannot be written.
	writeFile(t, filepath.Join(out, "bridge", "preamble.js", "x"), []byte("x"))
	before := readTree(t, out)
	err := WriteTree(out, map[string][]byte{"bridge/preamble.js": []byte("new")})
	if err == nil {
		t.Fatal("WriteTree over a folder succeeded")
	}
	if diff := cmp.Diff(before, readTree(t, out)); diff != "" {
		t.Errorf("a failed emit changed the folder (-before +after):\n%s", diff)
	}
	if got := siblings(t, out); len(got) > 0 {
		t.Errorf("a failed emit left %v", got)
	}
}

// TestEmitThroughALink: an output folder reached through a symbolic link
// stays a link to the folder that now holds the new tree.
func TestEmitThroughALink(t *testing.T) {
	manifests, out, _, newTree := swapFixture(t)
	link := filepath.Join(t.TempDir(), "gen-link")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	if err := Run(manifests, link); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if diff := cmp.Diff(newTree, readTree(t, out)); diff != "" {
		t.Errorf("the linked folder (-want +got):\n%s", diff)
	}
}
