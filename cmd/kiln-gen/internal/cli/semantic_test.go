//go:build semantic

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/semantic/semantictest"
)

// TestEmitVectors runs emit with the tiny test model through llama.cpp,
// taken from the config and from flags, and loads what it froze.
func TestEmitVectors(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join("..", "..", "..", "..", "gen", "emit", "testdata", "multi", "manifests")
	model := filepath.Join(dir, "models", "tiny.gguf")
	if err := os.Mkdir(filepath.Dir(model), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := semantictest.Tiny.WriteModel(model, []string{"search the web", "write a file"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "kiln.yaml")
	// A relative model path resolves against the config's folder.
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "version: 1\ngateway:\n  semantic:\n    model: models/tiny.gguf\n    sha256: %s\n", sum), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "generated")
	vectorsPath := filepath.Join(out, "searchindex", "vectors.bin")
	code, stdout, stderr := run(t, "emit", "--manifests", manifests, "--out", out, "--config", cfg)
	if code != exitOK || !strings.Contains(stdout, "froze semantic vectors with tiny.gguf (sha256 "+sum+")") {
		t.Fatalf("emit --config: exit %d\n%s%s", code, stdout, stderr)
	}
	first, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := semantic.Load(first)
	if err != nil {
		t.Fatalf("load emitted vectors: %v", err)
	}
	rawIndex, err := os.ReadFile(filepath.Join(out, "searchindex", "index.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.Load(rawIndex)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range ix.Len() {
		ids = append(ids, ix.Doc(i).ID)
	}
	if diff := cmp.Diff(ids, v.IDs); diff != "" {
		t.Errorf("vector IDs vs index (-index +vectors):\n%s", diff)
	}
	if v.Model != "tiny.gguf" || v.ModelSHA256 != sum || v.Dim != semantictest.Tiny.Embd {
		t.Errorf("recorded model %q sha256 %q dim %d", v.Model, v.ModelSHA256, v.Dim)
	}
	if err := v.Check(model, sum); err != nil {
		t.Errorf("Check with the emitting model: %v", err)
	}
	e, err := semantic.Open(model, sum, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := semantic.NewSearcher(ix, v, e, semantic.SearcherOptions{}); err != nil {
		t.Errorf("the emitted index and vectors do not fuse: %v", err)
	}

	// --model without a sha256 prints the file's and freezes the same
	// vectors: emit is deterministic for one model.
	code, stdout, stderr = run(t, "emit", "--manifests", manifests, "--out", out, "--model", model)
	if code != exitOK || !strings.Contains(stdout, "has sha256 "+sum) {
		t.Fatalf("emit --model: exit %d\n%s%s", code, stdout, stderr)
	}
	if again, _ := os.ReadFile(vectorsPath); !bytes.Equal(first, again) {
		t.Error("a second emit with the same model wrote different vectors")
	}

	// A wrong sha256 fails before anything is written.
	wrong := strings.Repeat("0", 64)
	code, stdout, stderr = run(t, "emit", "--manifests", manifests, "--out", filepath.Join(dir, "other"), "--model", model, "--model-sha256", wrong)
	if code != exitFail || !strings.Contains(stderr, wrong) || !strings.Contains(stderr, sum) {
		t.Errorf("emit with a wrong sha256: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed emit wrote output: %v", err)
	}
}

func TestEvalSemantic(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	mini := filepath.Join("..", "eval", "testdata", "mini")
	tools, queries := filepath.Join(mini, "tools.jsonl"), filepath.Join(mini, "queries.jsonl")
	if _, err := semantictest.Tiny.WriteModel(model, []string{"search the web for the weather forecast"}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "eval", "--tools", tools, "--queries", queries, "--model", model)
	if code != exitOK {
		t.Fatalf("eval --model: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"| shipped (search.Build) |", "| semantic only (tiny.gguf) |", "| shipped + semantic, RRF k=60, 30 per side |", "meaningless numbers"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("eval output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = run(t, "eval", "--tools", tools, "--queries", queries, "--model", model, "--json")
	if code != exitOK || !strings.Contains(stdout, `"semantic only (tiny.gguf)"`) || !strings.HasPrefix(stdout, "{") {
		t.Errorf("eval --model --json: exit %d\n%s%s", code, stdout, stderr)
	}
}
