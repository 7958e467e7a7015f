package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedDocs keeps schema/v1.json and the README's config reference
// equal to what keyTable declares: a key added to the table and not to the
// docs (or edited by hand there) fails here; `make config-docs` fixes it.
func TestGeneratedDocs(t *testing.T) {
	if !bytes.Equal(Schema(), GenerateSchema()) {
		t.Error("schema/v1.json differs from runtime/config/table.go; run make config-docs and commit the result")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceReference(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readme, want) {
		t.Error("README.md's config reference differs from runtime/config/table.go; run make config-docs and commit the result")
	}
}

// TestReferenceListsEveryKey checks the reference's content, not just its
// freshness: one row per key below the top level, with its range.
func TestReferenceListsEveryKey(t *testing.T) {
	ref := ReferenceMarkdown()
	for _, k := range keyTable {
		if k.parent() == "" {
			continue
		}
		row := "| `" + strings.ReplaceAll(k.path, "*", "NAME") + "` |"
		i := strings.Index(ref, row)
		if i < 0 {
			t.Errorf("no row for %s", k.path)
			continue
		}
		line, _, _ := strings.Cut(ref[i:], "\n")
		if k.min != "" && !strings.Contains(line, k.min+" to "+k.max) {
			t.Errorf("row of %s lacks its range: %s", k.path, line)
		}
	}
	if _, err := SpliceReference([]byte("# no markers\n")); err == nil || !strings.Contains(err.Error(), ReferenceBegin) {
		t.Errorf("SpliceReference without markers: err = %v, want one naming the marker", err)
	}
}
