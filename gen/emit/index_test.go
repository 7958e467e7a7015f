package emit

import (
	"path/filepath"
	"testing"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
)

// TestSearchIndex loads the frozen index emit wrote and searches it, so the
// bytes are a usable index of the emitted tools, not just stable bytes.
func TestSearchIndex(t *testing.T) {
	ms, err := manifest.ReadDir(filepath.Join("testdata", "basic", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(ms)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.Load(files["searchindex/index.bin"])
	if err != nil {
		t.Fatalf("load emitted index: %v", err)
	}
	tests := []struct{ query, want string }{
		{"echo back the input", "server-everything.echo"},
		{"add two numbers", "server-everything.add"},
		{"tiny image", "server-everything.get-tiny-image"},
	}
	for _, tt := range tests {
		hits := ix.Search(tt.query, search.Options{Limit: 3})
		if len(hits) == 0 || hits[0].ID != tt.want {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
		}
	}
}
