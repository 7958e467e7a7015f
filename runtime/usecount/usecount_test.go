package usecount

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kilnmcp/kiln/runtime/search"
)

func TestCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "usage.json")
	u, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Boost("web.web_search"); got != 1 {
		t.Errorf("unused boost = %v, want 1", got)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				u.Record("web.web_search")
			}
		})
	}
	wg.Wait()
	u.Record("files.read_file")
	if err := u.Save(); err != nil {
		t.Fatal(err)
	}

	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Count("web.web_search"); got != 80 {
		t.Errorf("count after restart = %d, want 80", got)
	}
	if got, want := again.Boost("web.web_search"), 1+0.3*math.Log(81); math.Abs(got-want) > 1e-12 {
		t.Errorf("boost = %v, want %v", got, want)
	}
	if again.Boost("files.read_file") >= again.Boost("web.web_search") {
		t.Error("boost does not grow with use")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	// Boost ranks the used tool first among equals.
	docs := []search.Doc{
		{ID: "a.echo", Backend: "a", Name: "echo", Description: "Echo input."},
		{ID: "b.echo", Backend: "b", Name: "echo", Description: "Echo input."},
	}
	u.Record("b.echo")
	expect := []string{"b.echo", "a.echo"}
	hits := search.Build(docs).Search("echo", search.Options{Boost: u.Boost})
	if len(hits) == 0 || hits[0].ID != expect[0] {
		t.Errorf("boosted order %v, want %v first", hits, expect)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage.json": "{not json",
		"version.json": `{"version": 99, "counts": {}}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
	mem, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	mem.Record("x.y")
	if err := mem.Save(); err != nil || mem.Count("x.y") != 1 {
		t.Errorf("in-memory usage: %v, count %d", err, mem.Count("x.y"))
	}
}

// BenchmarkRecord records calls to one tool of an installation that has
// used many: a call's cost must not grow with the tools used before it.
func BenchmarkRecord(b *testing.B) {
	for _, used := range []int{1, 1000} {
		b.Run(fmt.Sprintf("used-%d", used), func(b *testing.B) {
			u, err := Open("")
			if err != nil {
				b.Fatal(err)
			}
			for i := range used {
				u.Record(fmt.Sprintf("b.tool%d", i))
			}
			for b.Loop() {
				u.Record("b.tool0")
			}
		})
	}
}
