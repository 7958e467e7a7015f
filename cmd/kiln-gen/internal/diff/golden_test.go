package diff

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

var update = flag.Bool("update", false, "rewrite testdata/<case>/want.txt")

// A golden case is testdata/<case>/ holding old.json and/or new.json (one
// backend, compared with Manifests; a missing side is nil) or old/ and new/
// directories (several backends, compared with Backends), and want.txt, the
// rendered diff.
func TestGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, e := range entries {
		if e.Name() == "fuzz" {
			continue
		}
		if !e.IsDir() {
			t.Errorf("testdata/%s: stray file; golden cases are directories", e.Name())
			continue
		}
		cases++
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata", e.Name())
			changes := loadCase(t, dir)
			if !slices.IsSortedFunc(changes, compare) {
				t.Error("changes are not sorted")
			}
			var got bytes.Buffer
			if err := Render(&got, changes); err != nil {
				t.Fatal(err)
			}
			wantPath := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantPath, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("render mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if cases == 0 {
		t.Fatal("no golden cases found")
	}
}

func loadCase(t *testing.T, dir string) []Change {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains([]string{"old.json", "new.json", "old", "new", "want.txt"}, e.Name()) {
			t.Errorf("%s: unexpected %s", dir, e.Name())
		}
	}
	if isDir(filepath.Join(dir, "old")) || isDir(filepath.Join(dir, "new")) {
		old := readDir(t, filepath.Join(dir, "old"))
		new := readDir(t, filepath.Join(dir, "new"))
		for _, side := range [][]*manifest.Manifest{old, new} {
			if got := Backends(side, side); len(got) != 0 {
				t.Errorf("a side compared with itself gives changes: %v", got)
			}
		}
		return Backends(old, new)
	}
	old := readManifest(t, filepath.Join(dir, "old.json"))
	new := readManifest(t, filepath.Join(dir, "new.json"))
	if old == nil && new == nil {
		t.Fatalf("%s: neither old.json nor new.json", dir)
	}
	for _, m := range []*manifest.Manifest{old, new} {
		if got := Manifests(m, m); len(got) != 0 {
			t.Errorf("a manifest compared with itself gives changes: %v", got)
		}
	}
	return Manifests(old, new)
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func readDir(t *testing.T, dir string) []*manifest.Manifest {
	t.Helper()
	if !isDir(dir) {
		return nil
	}
	ms, err := manifest.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func readManifest(t testing.TB, path string) *manifest.Manifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
