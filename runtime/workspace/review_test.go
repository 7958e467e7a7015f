package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEditLargeFileKeepsItWhole edits a file larger than Read loads: the
// edit must not write back only the part that was read.
func TestEditLargeFileKeepsItWhole(t *testing.T) {
	f := newFixture(t, nil)
	body := bytes.Repeat([]byte("0123456789abcdef\n"), readMaxBytes/17+1000)
	data := append([]byte("HEAD\n"), body...)
	data = append(data, "TAIL\n"...)
	p := filepath.Join(f.root, "big.txt")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr := f.call("Edit", map[string]any{"file_path": "big.txt", "old_string": "HEAD", "new_string": "head"})
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if isErr {
		if !bytes.Equal(got, data) {
			t.Fatalf("Edit failed (%s) and changed the file: %d bytes, want %d", text, len(got), len(data))
		}
		if !strings.Contains(text, "Bash") {
			t.Errorf("Edit error %q does not say what to use instead", text)
		}
		return
	}
	want := append([]byte("head\n"), data[5:]...)
	if !bytes.Equal(got, want) {
		t.Fatalf("Edit of a %d-byte file left %d bytes (ends %q)", len(data), len(got), got[max(0, len(got)-10):])
	}
}
