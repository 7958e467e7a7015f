package kiln

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestLayoutTable keeps the Layout table of docs/architecture.md equal to
// the tree:
// every Go package is in it (a row of its own, under a row ending in "/",
// or named in the row of the nearest listed folder above it, as
// `chain/jslit` or `redistest`), no path has two rows, and every row's
// path exists.
func TestLayoutTable(t *testing.T) {
	readme, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Layout" section`)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	rows := map[string]string{} // path → job cell
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			p := m[1]
			if _, dup := rows[p]; dup {
				t.Errorf("docs/architecture.md Layout lists %s twice", p)
			}
			rows[p] = cells[2]
			if _, err := os.Stat(strings.TrimSuffix(p, "/")); err != nil {
				t.Errorf("docs/architecture.md Layout lists %s, which does not exist", p)
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, pkg := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel == "" {
			rel = "."
		}
		if !layoutCovers(rows, rel) {
			t.Errorf("docs/architecture.md Layout does not list %s: add a row, or name it in the row of the folder above it", rel)
		}
	}
}

func layoutCovers(rows map[string]string, rel string) bool {
	if _, ok := rows[rel]; ok {
		return true
	}
	for p := range rows {
		if strings.HasSuffix(p, "/") && (strings.HasPrefix(rel, p) || rel+"/" == p) {
			return true
		}
	}
	// The nearest listed folder above rel must name the rest of its path.
	for dir := rel; strings.Contains(dir, "/"); {
		dir = dir[:strings.LastIndex(dir, "/")]
		if job, ok := rows[dir]; ok {
			rest := strings.TrimPrefix(rel, dir+"/")
			return strings.Contains(job, "`"+rest+"`") || strings.Contains(job, "/"+rest+"`")
		}
	}
	return false
}
