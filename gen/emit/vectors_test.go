package emit

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
)

// hashEmbedder is a deterministic stand-in for a model: 8 dimensions
// derived from the text's FNV hash, so every text gets its own vector.
type hashEmbedder struct{ fail string }

func (h hashEmbedder) Embed(text string) ([]float32, error) {
	if text == h.fail {
		return nil, errors.New("boom")
	}
	f := fnv.New64a()
	f.Write([]byte(text))
	x := f.Sum64()
	v := make([]float32, 8)
	for i := range v {
		v[i] = float32(int8(x>>(8*i))) / 128
	}
	return v, nil
}

func (hashEmbedder) Close() error { return nil }

func multiManifests(t *testing.T) []*manifest.Manifest {
	t.Helper()
	ms, err := manifest.ReadDir(filepath.Join("testdata", "multi", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

var testVectors = &VectorOptions{Embedder: hashEmbedder{}, Model: "tiny.gguf", SHA256: strings.Repeat("0f", 32)}

// TestVectors checks that emit with a model freezes one vector per indexed
// tool, in the index's order, from ToolText, with the model recorded, and
// changes nothing else.
func TestVectors(t *testing.T) {
	ms := multiManifests(t)
	plain, err := Files(ms)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain[vectorsFile]; ok {
		t.Fatalf("emit without a model wrote %s", vectorsFile)
	}
	files, err := Generate(ms, Options{Vectors: testVectors})
	if err != nil {
		t.Fatal(err)
	}
	v, err := semantic.Load(files[vectorsFile])
	if err != nil {
		t.Fatalf("load emitted vectors: %v", err)
	}
	ix, err := search.Load(files["searchindex/index.bin"])
	if err != nil {
		t.Fatal(err)
	}
	want := &semantic.Vectors{Model: "tiny.gguf", ModelSHA256: testVectors.SHA256, Dim: 8}
	for i := range ix.Len() {
		d := ix.Doc(i)
		want.IDs = append(want.IDs, d.ID)
		row, _ := hashEmbedder{}.Embed(semantic.ToolText(d.Name, d.Description))
		want.Data = append(want.Data, row...)
	}
	if len(want.IDs) < 3 {
		t.Fatalf("the multi case has only %d tools", len(want.IDs))
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("emitted vectors (-want +got):\n%s", diff)
	}
	if err := v.Check("/elsewhere/tiny.gguf", testVectors.SHA256); err != nil {
		t.Errorf("Check with the emitting model: %v", err)
	}
	delete(files, vectorsFile)
	if diff := cmp.Diff(plain, files); diff != "" {
		t.Errorf("a model changed other generated files (-without +with):\n%s", diff)
	}

	first := ix.Doc(0)
	failing := &VectorOptions{Embedder: hashEmbedder{fail: semantic.ToolText(first.Name, first.Description)}}
	if _, err := Generate(ms, Options{Vectors: failing}); err == nil {
		t.Error("Generate ignored an embedding failure")
	}
}

// TestVectorsRemovedWithoutModel: an emit without a model removes the
// vectors an earlier emit wrote, since they would describe another index.
func TestVectorsRemovedWithoutModel(t *testing.T) {
	dir := filepath.Join("testdata", "multi", "manifests")
	out := t.TempDir()
	path := filepath.Join(out, filepath.FromSlash(vectorsFile))
	if err := RunWith(dir, out, Options{Vectors: testVectors}); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("RunWith a model wrote no vectors: %v", err)
	}
	if err := RunWith(dir, out, Options{Vectors: testVectors}); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(path); !bytes.Equal(first, second) {
		t.Error("two emits with one model wrote different vectors")
	}
	if err := Run(dir, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("emit without a model left %s: %v", vectorsFile, err)
	}
	if _, err := os.Stat(filepath.Join(out, "searchindex", "index.bin")); err != nil {
		t.Errorf("index.bin: %v", err)
	}
}
