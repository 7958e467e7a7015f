package emit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/*/want")

// goldens records, per case that ran, which golden files a test produced,
// so TestMain can fail on goldens nothing checks any more.
var goldens = struct {
	sync.Mutex
	produced map[string]map[string]bool // case dir -> relative paths
}{produced: map[string]map[string]bool{}}

func produced(caseDir, rel string) {
	goldens.Lock()
	defer goldens.Unlock()
	if goldens.produced[caseDir] == nil {
		goldens.produced[caseDir] = map[string]bool{}
	}
	goldens.produced[caseDir][rel] = true
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 {
		if err := checkOrphans(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkOrphans fails on (or, with -update, deletes) files under the want/
// directory of a case that ran but that no test produced.
func checkOrphans() error {
	var errs []error
	for caseDir, seen := range goldens.produced {
		want := filepath.Join(caseDir, "want")
		_ = filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(caseDir, p)
			if seen[filepath.ToSlash(rel)] {
				return nil
			}
			if *update {
				return os.Remove(p)
			}
			errs = append(errs, fmt.Errorf("golden %s is not produced by any test; delete it or run go test -update", p))
			return nil
		})
		if *update {
			removeEmptyDirs(want)
		}
	}
	return errors.Join(errs...)
}

func removeEmptyDirs(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		_ = os.Remove(d) // fails on non-empty directories, as intended
	}
}

// golden compares got with caseDir/rel, or rewrites it under -update.
func golden(t *testing.T, caseDir, rel string, got []byte) {
	t.Helper()
	produced(caseDir, rel)
	p := filepath.Join(caseDir, filepath.FromSlash(rel))
	if *update {
		writeFile(t, p, got)
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("missing golden %s (run go test -update): %v", p, err)
		return
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (-want +got):\n%s", p, cmp.Diff(string(want), string(got)))
	}
}

// goldenCase is one testdata/<case>: manifests/*.json in, want/... out, or
// stderr.txt for an expected failure. usage.go.txt, when present, is a Go
// file using the generated API that must compile and pass.
type goldenCase struct {
	name, dir string
	ms        []*manifest.Manifest
	files     map[string][]byte // as built in the build module
}

func TestGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	mod := newBuildModule(t)
	var built []*goldenCase
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") || e.Name() == "fuzz" {
			continue
		}
		gc := &goldenCase{name: e.Name(), dir: filepath.Join("testdata", e.Name())}
		t.Run(gc.name, func(t *testing.T) {
			if gc.run(t, mod) {
				built = append(built, gc)
			}
		})
	}
	if len(built) == 0 {
		return
	}
	t.Run("compile", func(t *testing.T) { compileGoldens(t, mod, built) })
}

// run checks one case's goldens and writes its build variant into mod; it
// reports whether there is code to compile.
func (gc *goldenCase) run(t *testing.T, mod string) bool {
	ms, err := manifest.ReadDir(filepath.Join(gc.dir, "manifests"))
	var files map[string][]byte
	if err == nil {
		files, err = Files(ms)
	}
	stderrPath := filepath.Join(gc.dir, "stderr.txt")
	_, statErr := os.Stat(stderrPath)
	wantFail := statErr == nil
	if err != nil {
		if !wantFail && !*update {
			t.Fatalf("emit failed: %v", err)
		}
		golden(t, gc.dir, "stderr.txt", []byte(err.Error()+"\n"))
		return false
	}
	if wantFail {
		if *update {
			_ = os.Remove(stderrPath)
		} else {
			t.Fatalf("emit succeeded but %s expects a failure", stderrPath)
		}
	}
	for p, b := range files {
		// The index bytes belong to runtime/search; compileGoldens checks
		// that the embedded copy matches what emit built instead.
		if path.Base(p) == "index.bin" {
			continue
		}
		golden(t, gc.dir, "want/"+p, b)
	}

	gc.ms = ms
	gc.files, err = Generate(ms, Options{ImportPath: buildModule + "/" + gc.name + "/generated"})
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range gc.files {
		if p != "kiln.gen.go" && !bytes.Equal(b, files[p]) {
			t.Errorf("%s depends on the import path", p)
		}
	}
	writeTree(t, filepath.Join(mod, gc.name, "generated"), gc.files)
	if usage, err := os.ReadFile(filepath.Join(gc.dir, "usage.go.txt")); err == nil {
		src := strings.ReplaceAll(string(usage), "{{GEN}}", buildModule+"/"+gc.name+"/generated")
		writeFile(t, filepath.Join(mod, gc.name, "usage", "usage.go"), []byte(src))
	}
	return true
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// compileGoldens vets every case's generated tree and runs a program that
// loads it: RegisterAll must fill a registry, each compiled Manifest must
// encode to the same bytes as the manifest it came from, the embedded files
// must be the emitted ones, and each usage.Run must pass.
func compileGoldens(t *testing.T, mod string, cases []*goldenCase) {
	writeFile(t, filepath.Join(mod, "check", "check.go"), []byte(checkPkg))
	var imports, body strings.Builder
	for i, gc := range cases {
		base := buildModule + "/" + gc.name + "/generated"
		fmt.Fprintf(&imports, "\tg%d %q\n\tbr%d %q\n\tix%d %q\n", i, base, i, base+"/bridge", i, base+"/searchindex")
		fmt.Fprintf(&body, "\t{\n\t\tc := %q\n\t\tr := registry.New()\n", gc.name)
		fmt.Fprintf(&body, "\t\tif err := g%d.RegisterAll(r); err != nil {\n\t\t\tfail(c, \"RegisterAll: %%v\", err)\n\t\t}\n", i)
		var backends []string
		tools := 0
		for j, m := range gc.ms {
			backends = append(backends, m.Backend)
			tools += len(m.Tools)
			enc, err := manifest.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&imports, "\tb%d_%d %q\n", i, j, base+"/"+m.Backend)
			fmt.Fprintf(&body, "\t\tmanifestSum(c, b%d_%d.Manifest, %q)\n", i, j, sum(enc))
		}
		fmt.Fprintf(&body, "\t\tif got := strings.Join(g%d.Backends, \",\"); got != %q {\n\t\t\tfail(c, \"Backends = %%q\", got)\n\t\t}\n", i, strings.Join(backends, ","))
		fmt.Fprintf(&body, "\t\tif got := len(r.Tools()); got != %d {\n\t\t\tfail(c, \"registry has %%d tools\", got)\n\t\t}\n", tools)
		fmt.Fprintf(&body, "\t\tif got := sum([]byte(br%d.Preamble)); got != %q {\n\t\t\tfail(c, \"embedded preamble differs\")\n\t\t}\n", i, sum(gc.files["bridge/preamble.js"]))
		fmt.Fprintf(&body, "\t\tif got := sum([]byte(ix%d.Data)); got != %q {\n\t\t\tfail(c, \"embedded index differs\")\n\t\t}\n", i, sum(gc.files["searchindex/index.bin"]))
		if _, err := os.Stat(filepath.Join(mod, gc.name, "usage")); err == nil {
			fmt.Fprintf(&imports, "\tu%d %q\n", i, buildModule+"/"+gc.name+"/usage")
			fmt.Fprintf(&body, "\t\tif err := u%d.Run(); err != nil {\n\t\t\tfail(c, \"usage: %%v\", err)\n\t\t}\n", i)
		}
		body.WriteString("\t}\n")
	}
	mainSrc := strings.Replace(checkMain, "\t// IMPORTS\n", imports.String(), 1)
	mainSrc = strings.Replace(mainSrc, "\t// BODY\n", body.String(), 1)
	writeFile(t, filepath.Join(mod, "cmd", "check", "main.go"), []byte(mainSrc))

	if out, err := goCmd(t, mod, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the generated code failed: %v\n%s", err, out)
	}
	if out, err := goCmd(t, mod, "run", "./cmd/check"); err != nil || out != "" {
		t.Fatalf("check program failed: %v\n%s", err, out)
	}
}

const checkPkg = `// Package check is a toolcall.Caller that records calls, for usage tests.
package check

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Recorder records every call and answers with a text result.
type Recorder struct{ calls []string }

// CallTool records backend, tool and the argument JSON.
func (r *Recorder) CallTool(_ context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	r.calls = append(r.calls, backend+" "+tool+" "+string(args))
	return toolcall.Text("ok"), nil
}

// Expect checks the last call, written as "backend tool {json}".
func (r *Recorder) Expect(want string) error {
	if len(r.calls) == 0 {
		return fmt.Errorf("no call, want %s", want)
	}
	if got := r.calls[len(r.calls)-1]; got != want {
		return fmt.Errorf("call\n got %s\nwant %s", got, want)
	}
	return nil
}
`

const checkMain = `package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	// IMPORTS
)

var failed bool

func fail(c, format string, a ...any) {
	fmt.Printf(c+": "+format+"\n", a...)
	failed = true
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func manifestSum(c string, m *manifest.Manifest, want string) {
	enc, err := manifest.Encode(m)
	if err != nil {
		fail(c, "encode %s: %v", m.Backend, err)
		return
	}
	if got := sum(enc); got != want {
		fail(c, "compiled manifest of %s does not round-trip:\n%s", m.Backend, enc)
	}
}

func main() {
	// BODY
	if failed {
		os.Exit(1)
	}
}
`
