//go:build !semantic

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelNeedsSemanticBuild: a pure-Go kiln-gen asked for vectors says
// how to get a kiln-gen that can compute them, and writes nothing.
func TestModelNeedsSemanticBuild(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join("..", "..", "..", "..", "gen", "emit", "testdata", "multi", "manifests")
	cfg := filepath.Join(dir, "kiln.yaml")
	if err := os.WriteFile(cfg, []byte("version: 1\ngateway:\n  semantic:\n    model: tiny.gguf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	never := filepath.Join(dir, "never")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"emit --model", []string{"emit", "--manifests", manifests, "--model", "tiny.gguf", "--out", never}, "--model asks for semantic vectors"},
		{"emit --config", []string{"emit", "--manifests", manifests, "--config", cfg, "--out", never}, "gateway.semantic.model in " + cfg},
		{"eval --model", []string{"eval", "--tools", "t.jsonl", "--queries", "q.jsonl", "--model", "tiny.gguf"}, "--model asks for semantic vectors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "make generate SEMANTIC=1") {
				t.Errorf("exit %d (want %d), output:\n%s%s", code, exitUsage, stdout, stderr)
			}
			if _, err := os.Stat(never); err == nil {
				t.Errorf("%s wrote %s", tc.name, never)
			}
		})
	}
	// Without --config, emit ignores the configured model: make emit (CI)
	// must stay byte-identical whatever kiln.yaml says.
	out := filepath.Join(dir, "generated")
	if code, stdout, stderr := run(t, "emit", "--manifests", manifests, "--out", out); code != exitOK {
		t.Fatalf("emit without a model: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "searchindex", "vectors.bin")); err == nil {
		t.Error("emit without a model wrote vectors")
	}
}

// TestModelFlagsWithoutModel: flags that only mean something with a model
// are refused rather than ignored, so a build never quietly loses its
// vectors.
func TestModelFlagsWithoutModel(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join("..", "..", "..", "..", "gen", "emit", "testdata", "multi", "manifests")
	cfg := filepath.Join(dir, "kiln.yaml")
	if err := os.WriteFile(cfg, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "never")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"config without a model", []string{"--config", cfg}, "sets neither gateway.semantic.model nor gateway.vectors.file"},
		{"sha256 alone", []string{"--model-sha256", strings.Repeat("a", 64)}, "need --model"},
		{"threads alone", []string{"--threads", "2"}, "need --model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"emit", "--manifests", manifests, "--out", out}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), output:\n%s%s", code, exitUsage, stdout, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s wrote %s", tc.name, out)
			}
		})
	}
}
