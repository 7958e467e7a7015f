package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
)

func TestRunWritesBoth(t *testing.T) {
	dir := t.TempDir()
	schema, readme := filepath.Join(dir, "v1.json"), filepath.Join(dir, "README.md")
	doc := "# Title\n\n" + config.ExampleBegin + "\nstale\n" + config.ExampleEnd + "\n\n" + config.ReferenceBegin + "\nstale\n" + config.ReferenceEnd + "\n\nafter\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(schema, readme); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(schema)
	if !bytes.Equal(got, config.GenerateSchema()) {
		t.Error("schema file differs from config.GenerateSchema")
	}
	md, _ := os.ReadFile(readme)
	example, err := config.ExampleYAML()
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\n" + config.ExampleBegin + "\n\n```yaml\n" + example + "```\n\n" + config.ExampleEnd + "\n\n" + config.ReferenceMarkdown() + "\n\nafter\n"
	if string(md) != want {
		t.Errorf("README not spliced:\n%s", md)
	}
}

// TestRunRefusesReadmeWithoutMarkers checks that nothing is written when
// the README cannot take the example and the reference.
func TestRunRefusesReadmeWithoutMarkers(t *testing.T) {
	dir := t.TempDir()
	schema, readme := filepath.Join(dir, "v1.json"), filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(schema, readme)
	if err == nil || !strings.Contains(err.Error(), config.ExampleBegin) {
		t.Fatalf("err = %v, want one naming the markers", err)
	}
	if _, statErr := os.Stat(schema); !os.IsNotExist(statErr) {
		t.Errorf("schema written although the README was refused: %v", statErr)
	}
}
