package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedDocs keeps schema/v1.json and docs/reference/config.md
// equal to what keyTable declares: a key added to the table and not to the
// docs (or edited by hand there) fails here; `make config-docs` fixes it.
func TestGeneratedDocs(t *testing.T) {
	if !bytes.Equal(Schema(), GenerateSchema()) {
		t.Error("schema/v1.json differs from runtime/config/table.go; run make docs and commit the result")
	}
	page, err := os.ReadFile("../../docs/reference/config.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceReference(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Error("docs/reference/config.md differs from runtime/config/table.go; run make docs and commit the result")
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
	if _, err := SpliceReference([]byte("# no markers\n")); err == nil || !strings.Contains(err.Error(), ExampleBegin) {
		t.Errorf("SpliceReference without markers: err = %v, want one naming the marker", err)
	}
	if _, err := SpliceReference([]byte(ExampleBegin + "\n" + ExampleEnd + "\n")); err == nil || !strings.Contains(err.Error(), ReferenceBegin) {
		t.Errorf("SpliceReference without reference markers: err = %v, want one naming the marker", err)
	}
}

// TestExampleYAML: the reference's annotated kiln.yaml takes its defaults
// from the key table, keeps its comments aligned, and names only keys the
// table declares.
func TestExampleYAML(t *testing.T) {
	got, err := ExampleYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "@def") || strings.Contains(got, "@note") {
		t.Errorf("a placeholder is left in the example:\n%s", got)
	}
	for _, path := range []string{"gateway.sandbox.memory", "gateway.http.max_sessions_total", "backends.*.queue_wait"} {
		k, _ := declared(path)
		name := path[strings.LastIndex(path, ".")+1:]
		if !strings.Contains(got, " "+name+": "+k.def+" ") && !strings.Contains(got, " "+name+": "+k.def+"\n") {
			t.Errorf("the example does not show %s: %s", path, k.def)
		}
	}
	for _, c := range []struct{ line, rendered, want string }{
		{"  a: @def       # c\n", "  a: 30s       # c\n", "  a: 30s        # c\n"},
		{"  abc: @def  # c\n", "  abc: 1024  # c\n", "  abc: 1024  # c\n"},
		{"  a: @def # c\n", "  a: authorization_code # c\n", "  a: authorization_code  # c\n"},
		{"  # only a comment @note\n", "  # only a comment x\n", "  # only a comment x\n"},
	} {
		if got := keepCommentColumn(c.line, c.rendered); got != c.want {
			t.Errorf("keepCommentColumn(%q, %q) = %q, want %q", c.line, c.rendered, got, c.want)
		}
	}
	saved := exampleTemplate
	t.Cleanup(func() { exampleTemplate = saved })
	exampleTemplate = "gateway:\n  nope: @def\n"
	if _, err := ExampleYAML(); err == nil || !strings.Contains(err.Error(), "example.tmpl:2: gateway.nope has no def") {
		t.Errorf("unknown key: err = %v", err)
	}
}
