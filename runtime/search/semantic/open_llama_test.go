//go:build semantic

// These tests load real GGUF files through kelindar/search and llama.cpp.
// Run them after `make llama` with the library directory on the loader
// path (kelindar panics in its package init, before any test can skip):
//
//	LD_LIBRARY_PATH=$PWD/.cache/llama/lib go test -tags semantic ./runtime/search/semantic/...

package semantic

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kilnmcp/kiln/runtime/search/semantic/semantictest"
)

var tools = []struct{ id, name, desc string }{
	{"fs.read_file", "read_file", "Read the complete contents of a file from disk."},
	{"fs.write_file", "write_file", "Create a new file or overwrite an existing one with new content."},
	{"fs.list_directory", "list_directory", "List all files and directories in a directory path."},
	{"weather.get_forecast", "get_forecast", "Get the weather forecast for a city: temperature, rain and wind."},
	{"git.commit", "commit", "Record staged changes to the repository with a commit message."},
	{"mail.send_email", "send_email", "Send an email message to a recipient with a subject and body."},
}

func corpus() []string {
	var texts []string
	for _, tl := range tools {
		texts = append(texts, ToolText(tl.name, tl.desc))
	}
	return texts
}

// writeModel writes the tiny test model and returns its path and sha256.
func writeModel(t testing.TB, b semantictest.BERT) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	sum, err := b.WriteModel(path, corpus())
	if err != nil {
		t.Fatal(err)
	}
	return path, sum
}

func mustOpen(t testing.TB, path, sum string, threads int) Embedder {
	t.Helper()
	e, err := Open(path, sum, threads)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func embed(t testing.TB, e Embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(text)
	if err != nil {
		t.Fatalf("Embed(%q): %v", text, err)
	}
	return v
}

func TestOpenEmbeds(t *testing.T) {
	if !Available {
		t.Fatal("Available is false in a semantic build")
	}
	path, sum := writeModel(t, semantictest.Tiny)
	e := mustOpen(t, path, sum, 1)
	for _, text := range []string{"read a file", "", "Ünïcödé — ✓ 東京", strings.Repeat("word ", 2000)} {
		v := embed(t, e, text)
		if len(v) != semantictest.Tiny.Embd {
			t.Fatalf("Embed(%.20q) has %d dimensions, want %d", text, len(v), semantictest.Tiny.Embd)
		}
		var n float64
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("Embed(%.20q) = %v: not finite", text, v)
			}
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Errorf("Embed(%.20q) has norm² %v, want 1 (the shim normalizes)", text, n)
		}
	}
}

func TestEmbedDeterministic(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	a := mustOpen(t, path, sum, 1)
	first := embed(t, a, "send an email")
	if diff := cmp.Diff(first, embed(t, a, "send an email")); diff != "" {
		t.Errorf("same text, same embedder (-first +second):\n%s", diff)
	}
	b := mustOpen(t, path, sum, 1)
	if diff := cmp.Diff(first, embed(t, b, "send an email")); diff != "" {
		t.Errorf("same text, second embedder (-first +second):\n%s", diff)
	}
	if cmp.Equal(first, embed(t, a, "commit changes")) {
		t.Error("different texts gave identical vectors")
	}
	// The same file written again (same seed) is the same model.
	path2, sum2 := writeModel(t, semantictest.Tiny)
	if sum2 != sum {
		t.Fatalf("the model writer is not deterministic: %s vs %s", sum, sum2)
	}
	c := mustOpen(t, path2, sum2, 1)
	if diff := cmp.Diff(first, embed(t, c, "send an email")); diff != "" {
		t.Errorf("same text, rewritten model (-first +second):\n%s", diff)
	}
}

func TestOpenChecksSHA256(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	wrong := strings.Repeat("0", 64)
	tests := []struct {
		name     string
		want     string
		mentions []string
	}{
		{"mismatch", wrong, []string{path, sum, wrong}},
		{"missing", "", []string{path, sum, "no sha256"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open(path, tc.want, 1)
			if !errors.Is(err, ErrModelMismatch) || e != nil {
				t.Fatalf("Open = %v, %v; want ErrModelMismatch", e, err)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
	if e, err := Open(path, strings.ToUpper(sum), 0); err != nil {
		t.Errorf("Open with an upper-case sha256: %v", err)
	} else {
		e.Close()
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(junk, []byte("GGUF but not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	junkSum, _ := FileSHA256(junk)
	path, sum := writeModel(t, semantictest.Tiny)
	tests := []struct {
		name, path, sum string
		threads         int
	}{
		{"missing file", filepath.Join(dir, "absent.gguf"), "", 1},
		{"not a model", junk, junkSum, 1},
		{"negative threads", path, sum, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if e, err := Open(tc.path, tc.sum, tc.threads); err == nil {
				e.Close()
				t.Fatal("Open succeeded")
			} else if errors.Is(err, ErrModelMismatch) {
				t.Errorf("Open = %v: not a hash mismatch", err)
			}
		})
	}
}

// TestFrozenVectorsFindTool runs the whole path: vectors built at "emit
// time", marshalled, loaded at "run time", checked against the model and
// queried. The test model is a bag of words, so the tool sharing the
// query's words must come first.
func TestFrozenVectorsFindTool(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	e := mustOpen(t, path, sum, 1)
	var ids, texts []string
	for _, tl := range tools {
		ids = append(ids, tl.id)
		texts = append(texts, ToolText(tl.name, tl.desc))
	}
	built, err := BuildVectors(e, ids, texts, path, sum)
	if err != nil {
		t.Fatal(err)
	}
	b, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(path, sum); err != nil {
		t.Fatalf("Check with the building model: %v", err)
	}
	other, otherSum := writeModel(t, semantictest.BERT{Seed: 2})
	if err := v.Check(other, otherSum); !errors.Is(err, ErrModelMismatch) {
		t.Errorf("Check with another model: err = %v, want ErrModelMismatch", err)
	}

	for _, tc := range []struct{ query, want string }{
		{"weather forecast for a city", "weather.get_forecast"},
		{"read the contents of a file", "fs.read_file"},
		{"send an email to a recipient", "mail.send_email"},
		{"record staged changes with a commit message", "git.commit"},
	} {
		hits, err := v.Query(e, tc.query, 3)
		if err != nil {
			t.Fatalf("Query(%q): %v", tc.query, err)
		}
		if len(hits) != 3 || hits[0].ID != tc.want {
			t.Errorf("Query(%q) = %v, want %s first", tc.query, hits, tc.want)
		}
	}
}

func TestEmbedConcurrent(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	e := mustOpen(t, path, sum, 1)
	want := map[string][]float32{}
	for _, tl := range tools {
		want[tl.desc] = embed(t, e, tl.desc)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(tools))
	for range 4 {
		for _, tl := range tools {
			wg.Go(func() {
				got, err := e.Embed(tl.desc)
				if err == nil && !cmp.Equal(want[tl.desc], got) {
					err = fmt.Errorf("%q: concurrent embedding differs", tl.desc)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEmbedAfterClose(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	e, err := Open(path, sum, 1)
	if err != nil {
		t.Fatal(err)
	}
	embed(t, e, "warm the context pool")
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := e.Embed("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Embed after Close: err = %v, want ErrClosed", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestQ8ModelMatchesF32 loads the same weights as F32 and as Q8_0: llama.cpp
// must read our Q8_0 blocks as the values they approximate.
func TestQ8ModelMatchesF32(t *testing.T) {
	b := semantictest.BERT{Embd: 64, Layers: 2, Heads: 4, FF: 128, Context: 256, Seed: 5}
	fpPath, fpSum := writeModel(t, b)
	b.Q8 = true
	q8Path, q8Sum := writeModel(t, b)
	fp, q8 := mustOpen(t, fpPath, fpSum, 1), mustOpen(t, q8Path, q8Sum, 1)
	v := &Vectors{Dim: 64}
	for _, tl := range tools {
		v.IDs = append(v.IDs, tl.id)
		v.Data = append(v.Data, embed(t, fp, tl.desc)...)
	}
	for _, tl := range tools {
		// Nearest to the F32 vectors: its own, with cosine near 1.
		hits := v.Nearest(embed(t, q8, tl.desc), 2)
		if hits[0].ID != tl.id || hits[0].Score < 0.99 {
			t.Errorf("Q8_0 embedding of %s is nearest to %v, want itself at cosine >= 0.99", tl.id, hits)
		}
	}
}

// TestThreadsSameVectors: the thread count changes speed, not results.
func TestThreadsSameVectors(t *testing.T) {
	path, sum := writeModel(t, semantictest.Tiny)
	one := embed(t, mustOpen(t, path, sum, 1), "list files in a directory")
	two := embed(t, mustOpen(t, path, sum, 2), "list files in a directory")
	if diff := cmp.Diff(one, two, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
		t.Errorf("1 thread vs 2 (-one +two):\n%s", diff)
	}
	if err := setThreads(1); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkEmbed measures one query embedding. "minilm" has the shape of
// all-MiniLM-L6-v2 (384 wide, 6 layers) with random F32 weights.
func BenchmarkEmbed(b *testing.B) {
	models := []struct {
		name string
		bert semantictest.BERT
	}{{"tiny", semantictest.Tiny}, {"minilm", semantictest.MiniLM}}
	for _, m := range models {
		path, sum := writeModel(b, m.bert)
		for _, threads := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/threads=%d", m.name, threads), func(b *testing.B) {
				e := mustOpen(b, path, sum, threads)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := e.Embed("search for tools that read files from disk"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	if err := setThreads(1); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpen measures start-up: hashing the model file, loading it and
// the first embedding.
func BenchmarkOpen(b *testing.B) {
	path, sum := writeModel(b, semantictest.MiniLM)
	for b.Loop() {
		e, err := Open(path, sum, 1)
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
	}
}
