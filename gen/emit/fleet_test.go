package emit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// fleetPath is the LiveMCPBench tool list: 527 real tool schemas from 70
// servers, kept in the shared bench data beside the module.
func fleetPath(t testing.TB) string {
	return filepath.Join(moduleRoot(t), "..", "shared", "bench", "livemcpbench", "tools.jsonl")
}

// loadFleet turns the bench tool list into one manifest per server.
func loadFleet(t testing.TB) []*manifest.Manifest {
	t.Helper()
	p := fleetPath(t)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("fleet data not found at %s (it lives in the shared bench directory next to the repository)", p)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byServer := map[string]*manifest.Manifest{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			Server      string          `json:"server"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		m := byServer[row.Server]
		if m == nil {
			m = &manifest.Manifest{Version: manifest.Version, Backend: row.Server, Transport: "stdio",
				Server: manifest.ServerInfo{Name: row.Server, Version: "bench"}, ProtocolVersion: "2025-06-18"}
			byServer[row.Server] = m
		}
		m.Tools = append(m.Tools, manifest.Tool{Name: row.Name, Description: row.Description, InputSchema: row.InputSchema})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return slices.Collect(maps.Values(byServer))
}

// TestFleetCompiles emits the whole LiveMCPBench fleet and builds it: every
// one of its real schemas must yield code that compiles and vets.
func TestFleetCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 70 generated packages")
	}
	ms := loadFleet(t)
	tools := 0
	for _, m := range ms {
		tools += len(m.Tools)
	}
	if len(ms) != 70 || tools != 527 {
		t.Fatalf("fleet has %d servers and %d tools, want 70 and 527", len(ms), tools)
	}
	files, err := Generate(ms, Options{ImportPath: buildModule + "/generated"})
	if err != nil {
		t.Fatal(err)
	}
	stubs := 0
	for p, b := range files {
		if strings.Count(p, "/") == 1 && strings.HasSuffix(p, ".gen.go") && !strings.HasPrefix(p, bridgeDir+"/") && !strings.HasPrefix(p, indexDir+"/") {
			stubs += bytes.Count(b, []byte("return toolcall.Call(ctx, c, Backend, "))
		}
	}
	if stubs != tools {
		t.Errorf("emitted %d typed stubs, want %d", stubs, tools)
	}
	mod := newBuildModule(t)
	writeTree(t, filepath.Join(mod, "generated"), files)
	start := time.Now()
	if out, err := goCmd(t, mod, "build", "./..."); err != nil {
		t.Fatalf("go build of the fleet failed: %v\n%s", err, out)
	}
	t.Logf("go build of %d backend packages (%d tools): %v", len(ms), tools, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if out, err := goCmd(t, mod, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the fleet failed: %v\n%s", err, out)
	}
	t.Logf("go vet: %v", time.Since(start).Round(time.Millisecond))
}

// TestDeterministic emits the same input twice, and in shuffled order, and
// expects identical bytes.
func TestDeterministic(t *testing.T) {
	var testdata []*manifest.Manifest
	for _, c := range []string{"basic", "hostile", "multi"} {
		got, err := manifest.ReadDir(filepath.Join("testdata", c, "manifests"))
		if err != nil {
			t.Fatal(err)
		}
		testdata = append(testdata, got...)
	}
	t.Run("testdata", func(t *testing.T) { expectDeterministic(t, testdata) })
	t.Run("fleet", func(t *testing.T) { expectDeterministic(t, loadFleet(t)) })
}

func expectDeterministic(t *testing.T, ms []*manifest.Manifest) {
	t.Helper()
	want, err := Files(ms)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		shuffled := make([]*manifest.Manifest, len(ms))
		for i, m := range ms {
			c := *m
			c.Tools = slices.Clone(m.Tools)
			rand.Shuffle(len(c.Tools), func(a, b int) { c.Tools[a], c.Tools[b] = c.Tools[b], c.Tools[a] })
			shuffled[i] = &c
		}
		rand.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		got, err := Files(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(want, got, bytes.Equal) {
			for p := range want {
				if !bytes.Equal(want[p], got[p]) {
					t.Errorf("%s differs between runs", p)
				}
			}
			t.Fatalf("emit is not deterministic (%d vs %d files)", len(want), len(got))
		}
	}
}

func TestCheckRejects(t *testing.T) {
	tool := manifest.Tool{Name: "t", InputSchema: json.RawMessage(`{}`)}
	tests := []struct {
		name     string
		backends []string
		tools    []manifest.Tool
	}{
		{"path traversal", []string{"../x"}, nil},
		{"dot", []string{"a.b"}, nil},
		{"empty", []string{""}, nil},
		{"reserved bridge", []string{"bridge"}, nil},
		{"reserved searchindex", []string{"SearchIndex"}, nil},
		{"reserved vendor", []string{"vendor"}, nil},
		{"reserved testdata", []string{"testdata"}, nil},
		{"case collision", []string{"memory", "Memory"}, nil},
		{"duplicate backend", []string{"a", "a"}, nil},
		{"duplicate tool", []string{"a"}, []manifest.Tool{tool, tool}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []*manifest.Manifest
			for _, b := range tt.backends {
				ms = append(ms, &manifest.Manifest{Version: 1, Backend: b, Tools: tt.tools})
			}
			if _, err := Files(ms); err == nil {
				t.Fatal("Files succeeded")
			}
		})
	}
}

// TestRunRemovesStale runs emit into a directory, removes a backend and runs
// it again: the backend's package disappears, unchanged files are not
// rewritten, and hand-written files survive.
func TestRunRemovesStale(t *testing.T) {
	manifests := t.TempDir()
	out := t.TempDir()
	src, err := filepath.Glob(filepath.Join("testdata", "multi", "manifests", "*.json"))
	if err != nil || len(src) < 2 {
		t.Fatalf("multi manifests: %v %v", src, err)
	}
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(manifests, filepath.Base(p)), b)
	}
	writeFile(t, filepath.Join(out, "doc_extra.go"), []byte("package generated\n"))
	writeFile(t, filepath.Join(out, "my-app", "notes.txt"), []byte("hand-written\n"))
	if err := Run(manifests, out); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	kept := filepath.Join(out, "go", "go.gen.go")
	if err := os.Chtimes(kept, old, old); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"myapp", "my-app"} {
		if err := os.Remove(filepath.Join(manifests, b+".json")); err != nil {
			t.Fatal(err)
		}
	}
	if err := Run(manifests, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "myapp")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale backend directory myapp still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "my-app", "my-app.gen.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale my-app.gen.go still exists: %v", err)
	}
	for _, p := range []string{"doc_extra.go", "my-app/notes.txt", "my_app/my_app.gen.go", "kiln.gen.go", "bridge/preamble.js", "searchindex/index.bin"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fi, err := os.Stat(kept); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("unchanged %s was rewritten", kept)
	}
	kiln, err := os.ReadFile(filepath.Join(out, "kiln.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(kiln, []byte(`"my-app"`)) || !bytes.Contains(kiln, []byte(`"my_app"`)) {
		t.Errorf("kiln.gen.go does not follow the removal:\n%s", kiln)
	}
	if entries, _ := filepath.Glob(filepath.Join(out, "*", ".*.tmp*")); len(entries) > 0 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}
