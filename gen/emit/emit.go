package emit

import (
	"github.com/kilnmcp/kiln/runtime/atomicfile"

	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kilnmcp/kiln/gen"
	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// ErrBackendName reports a backend name emit cannot turn into a directory.
var ErrBackendName = errors.New("invalid backend name")

// backendName is what emit accepts as a directory and import path element.
// Config is stricter (^[a-z][a-z0-9_-]*$); emit also takes the upper-case
// and digit-first names real fleets use, since nothing here depends on it.
var backendName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Directories emit owns next to the backend packages.
const (
	bridgeDir = "bridge"
	indexDir  = "searchindex"
)

// vectorsFile holds the frozen semantic vectors, only when emit ran with a
// model. It is data, not Go: a generated Go file that exists only sometimes
// would break the build of anything naming it, so SEMANTIC=1 builds of
// kiln read it through the root package's embed pattern (kiln.SemanticVectors).
const vectorsFile = indexDir + "/vectors.bin"

// staticFile holds the frozen static word-vector tier, only when emit ran
// with a word-vector file; the root package embeds it by pattern
// (kiln.StaticVectors) for the same reason. Its licence notice goes beside
// it in staticLicense.
const (
	staticFile    = indexDir + "/static.bin"
	staticLicense = indexDir + "/static.LICENSE"
)

// ownDirs are emit's own packages beside the backend packages in
// generated/: the one list of them, which the directory and package-name
// checks below both read.
var ownDirs = []string{bridgeDir, indexDir}

// reservedDirs cannot hold a backend: emit's own packages, and the names
// the go command treats specially (vendor/ is a vendor tree, testdata/ is
// skipped).
var reservedDirs = setOf(append([]string{"vendor", "testdata"}, ownDirs...)...)

// allSources is line 2 of files derived from every manifest.
const allSources = "manifests/*.json"

// Options tunes Generate. The zero value emits for the kiln module.
type Options struct {
	// ImportPath is the import path of the output directory, used by
	// kiln.gen.go to import the backend packages. Default gen.GeneratedPkg.
	ImportPath string
	// Vectors, when set, also freezes the semantic vectors of every
	// compiled tool in searchindex/vectors.bin. Without it emit writes no
	// vectors, and removes any a previous emit wrote.
	Vectors *VectorOptions
	// Static, when set, also freezes the static word-vector tier in
	// searchindex/static.bin with its licence notice. Without it emit
	// writes neither, and removes any a previous emit wrote.
	Static *StaticOptions
}

// StaticOptions names the word vectors emit cuts the static tier from.
type StaticOptions struct {
	// Raw is the full word-vector set (static.Read).
	Raw *static.Raw
	// Source and SHA256 are recorded with the cut; Source should be the
	// file's base name, as for VectorOptions.Model.
	Source, SHA256 string
	// Top is how many frequent words the cut keeps besides the tools'.
	Top int
}

// VectorOptions names the embedding model emit computes tool vectors with.
type VectorOptions struct {
	// Embedder embeds semantic.ToolText(name, description) of each tool.
	Embedder semantic.Embedder
	// Model and SHA256 are recorded with the vectors. Model should be the
	// file's base name: generated/ must not depend on where a developer
	// keeps the file, and the gateway checks the sha256 only.
	Model, SHA256 string
}

// Run reads every manifest in manifestsDir and writes the generated tree to
// outDir, removing generated files of backends that are gone.
func Run(manifestsDir, outDir string) error { return RunWith(manifestsDir, outDir, Options{}) }

// RunWith is Run with options.
func RunWith(manifestsDir, outDir string, opts Options) error {
	ms, err := manifest.ReadDir(manifestsDir)
	if err != nil {
		return fmt.Errorf("emit: read manifests: %w", err)
	}
	files, err := Generate(ms, opts)
	if err != nil {
		return err
	}
	return WriteTree(outDir, files)
}

// Files returns the generated tree for ms as paths relative to generated/
// (slash-separated) mapped to file contents.
func Files(ms []*manifest.Manifest) (map[string][]byte, error) {
	return Generate(ms, Options{})
}

// Generate is Files with options.
func Generate(ms []*manifest.Manifest, opts Options) (map[string][]byte, error) {
	if opts.ImportPath == "" {
		opts.ImportPath = gen.GeneratedPkg
	}
	if slices.Contains(ms, nil) {
		return nil, errors.New("emit: nil manifest")
	}
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b *manifest.Manifest) int { return strings.Compare(a.Backend, b.Backend) })
	if err := check(sorted); err != nil {
		return nil, err
	}
	names := make([]string, len(sorted))
	for i, m := range sorted {
		names[i] = m.Backend
	}
	pkgs := packageNames(names)

	out := make(map[string][]byte, len(sorted)+5)
	for _, m := range sorted {
		src, err := backendFile(m, pkgs[m.Backend])
		if err != nil {
			return nil, fmt.Errorf("emit: backend %q: %w", m.Backend, err)
		}
		out[m.Backend+"/"+m.Backend+".gen.go"] = src
	}
	src, err := registerFile(sorted, pkgs, opts.ImportPath)
	if err != nil {
		return nil, err
	}
	out["kiln.gen.go"] = src
	if out[exposedFile], err = exposedFileSrc(sorted); err != nil {
		return nil, err
	}

	backends := make([]bridge.Backend, len(sorted))
	for i, m := range sorted {
		backends[i] = bridge.Backend{Name: m.Backend, Tools: m.Tools}
	}
	out[bridgeDir+"/preamble.js"] = append([]byte("// "+header+"\n// source: "+allSources+"\n"), bridge.Preamble(backends)...)
	if out[bridgeDir+"/bridge.gen.go"], err = embedFile(bridgeDir, "Preamble", "preamble.js", jen.String(),
		"Package bridge embeds the JavaScript preamble that exposes every compiled backend to call_tool_chain scripts.",
		"Preamble is the bridge preamble for the compiled backends; runtime/bridge.Preamble builds the same text at run time."); err != nil {
		return nil, err
	}

	docs := searchDocs(sorted)
	if out[indexDir+"/index.bin"], err = search.Build(docs).MarshalBinary(); err != nil {
		return nil, fmt.Errorf("emit: search index: %w", err)
	}
	if opts.Vectors != nil {
		if out[vectorsFile], err = toolVectors(docs, opts.Vectors); err != nil {
			return nil, fmt.Errorf("emit: semantic vectors: %w", err)
		}
	}
	if opts.Static != nil {
		if out[staticFile], err = staticTable(docs, opts.Static); err != nil {
			return nil, fmt.Errorf("emit: static vectors: %w", err)
		}
		out[staticLicense] = []byte(static.Notice(opts.Static.Source, opts.Static.SHA256))
	}
	if out[indexDir+"/searchindex.gen.go"], err = embedFile(indexDir, "Data", "index.bin", jen.String(),
		"Package searchindex embeds the search index frozen from the compiled backends' tools.",
		"Data is the marshalled runtime/search index of every compiled tool."); err != nil {
		return nil, err
	}
	return out, nil
}

// check rejects input that would generate colliding or unsafe paths, or a
// registry that cannot load.
func check(ms []*manifest.Manifest) error {
	dirs := map[string]string{}
	for _, m := range ms {
		if !backendName.MatchString(m.Backend) {
			return fmt.Errorf("emit: %w: %q must match %s; rename the backend in the config and re-record", ErrBackendName, m.Backend, backendName)
		}
		lower := strings.ToLower(m.Backend)
		if reservedDirs[lower] {
			return fmt.Errorf("emit: %w: %q is reserved in generated/ (%s); rename the backend in the config and re-record", ErrBackendName, m.Backend, strings.Join(slices.Sorted(maps.Keys(reservedDirs)), ", "))
		}
		if other, ok := dirs[lower]; ok && other == m.Backend {
			return fmt.Errorf("emit: %w: two manifests are for backend %q", ErrBackendName, m.Backend)
		} else if ok {
			// Case-insensitive file systems would merge these directories.
			return fmt.Errorf("emit: %w: %q and %q differ only in case; rename one in the config", ErrBackendName, other, m.Backend)
		}
		dirs[lower] = m.Backend
		seen := map[string]bool{}
		for _, t := range m.Tools {
			if t.Name == "" || seen[t.Name] {
				return fmt.Errorf("emit: backend %q: tool name %q is empty or appears twice; re-record the manifest", m.Backend, t.Name)
			}
			seen[t.Name] = true
		}
	}
	return nil
}

// exposedFile holds the table of exposed tool names, beside kiln.gen.go.
const exposedFile = "exposed.gen.go"

// exposedFileSrc renders the exposed-names table, one line per tool sorted
// by ID, so a rename (a collision that appeared, a suffix) is a visible
// diff in review.
func exposedFileSrc(ms []*manifest.Manifest) ([]byte, error) {
	names := exposedNames(ms)
	f := newFile("generated", allSources)
	f.Comment("ExposedNames maps each compiled tool (\"backend.tool\") to the name the direct and")
	f.Comment("hybrid exposure modes (gateway.expose) list it under when its backend is not bare:")
	f.Comment("backend__tool in the characters every LLM API accepts, with a hash suffix on a")
	f.Comment("collision or past 64 characters (runtime/registry.ExposeNames).")
	d := jen.Dict{}
	for id, n := range names {
		d[jen.Lit(id)] = jen.Lit(n)
	}
	f.Var().Id("ExposedNames").Op("=").Map(jen.String()).String().Values(d)
	return render(f)
}

// registerFile renders kiln.gen.go. Registration is explicit and ordered:
// no init() side effects, so importing a backend package never changes a
// registry by itself.
func registerFile(ms []*manifest.Manifest, pkgs map[string]string, importPath string) ([]byte, error) {
	f := newFile("generated", allSources)
	f.PackageComment("Package generated ties the compiled backends together: RegisterAll adds every one of them to a registry.")
	f.PackageComment("Regenerate it with `kiln-gen emit`; do not edit it.")
	// An explicit alias, since a directory such as server-everything does
	// not say its package name.
	for _, m := range ms {
		f.ImportAlias(path.Join(importPath, m.Backend), pkgs[m.Backend])
	}
	f.Comment("Backends lists the compiled backends, sorted by name.")
	f.Var().Id("Backends").Op("=").Index().String().ValuesFunc(func(g *jen.Group) {
		for _, m := range ms {
			g.Line().Lit(m.Backend)
		}
		if len(ms) > 0 {
			g.Line()
		}
	})
	f.Comment("RegisterAll adds every compiled backend to r, in the order of Backends.")
	f.Func().Id("RegisterAll").Params(jen.Id("r").Op("*").Add(gen.Registry())).Error().BlockFunc(func(g *jen.Group) {
		for _, m := range ms {
			g.If(jen.Err().Op(":=").Qual(path.Join(importPath, m.Backend), identRegister).Call(jen.Id("r")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Err()),
			)
		}
		g.Return(jen.Nil())
	})
	return render(f)
}

// embedFile renders a package that embeds one file into one variable.
func embedFile(pkg, ident, file string, typ jen.Code, pkgDoc, doc string) ([]byte, error) {
	f := newFile(pkg, allSources)
	f.PackageComment(pkgDoc)
	f.Anon(gen.EmbedPkg)
	f.Comment(doc)
	f.Comment("//")
	f.Comment("//go:embed " + file)
	f.Var().Id(ident).Add(typ)
	return render(f)
}

func render(f *jen.File) ([]byte, error) {
	var b bytes.Buffer
	if err := f.Render(&b); err != nil {
		return nil, fmt.Errorf("emit: render: %w", err)
	}
	return b.Bytes(), nil
}

// Write writes files under outDir, each through a temporary file and a
// rename, skipping files whose bytes did not change (so mtimes and build
// caches survive a no-op emit). It then removes the generated files it owns
// that are no longer produced (*.gen.go files carrying the generated
// header, one directory level deep) and directories that leaves empty.
//
// Write changes outDir file by file; WriteTree (what emit runs) uses it on a
// copy of the tree and swaps the copy in.
func Write(outDir string, files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		dst := filepath.Join(outDir, filepath.FromSlash(p))
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := atomicfile.Write(dst, files[p]); err != nil {
			return fmt.Errorf("emit: write %s: %w", dst, err)
		}
		if crash("wrote " + p) {
			return errCrashed
		}
	}
	return removeStale(outDir, files)
}

func removeStale(outDir string, files map[string][]byte) error {
	for _, p := range []string{vectorsFile, staticFile, staticLicense} {
		if _, ok := files[p]; ok {
			continue
		}
		// The data files emit writes only sometimes: stale vectors would
		// no longer match index.bin.
		if err := os.Remove(filepath.Join(outDir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("emit: remove stale %s: %w", p, err)
		}
	}
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			if _, err := removeIfStale(outDir, e.Name(), files); err != nil {
				return err
			}
			continue
		}
		sub, err := os.ReadDir(filepath.Join(outDir, e.Name()))
		if err != nil {
			return fmt.Errorf("emit: %w", err)
		}
		removed := false
		for _, s := range sub {
			if s.IsDir() {
				continue
			}
			ok, err := removeIfStale(outDir, e.Name()+"/"+s.Name(), files)
			if err != nil {
				return err
			}
			removed = removed || ok
		}
		if removed {
			// Fails, as intended, when hand-written files remain.
			_ = os.Remove(filepath.Join(outDir, e.Name()))
		}
	}
	return nil
}

// removeIfStale removes rel if it is a *.gen.go file carrying the generated
// header that is no longer produced; nothing else can be emit's to delete.
func removeIfStale(outDir, rel string, files map[string][]byte) (bool, error) {
	if _, ok := files[rel]; ok || !strings.HasSuffix(rel, ".gen.go") {
		return false, nil
	}
	p := filepath.Join(outDir, filepath.FromSlash(rel))
	head, err := os.ReadFile(p)
	if err != nil || !bytes.HasPrefix(head, []byte("// "+header+"\n")) {
		return false, nil
	}
	if err := os.Remove(p); err != nil {
		return false, fmt.Errorf("emit: remove stale %s: %w", p, err)
	}
	return true, nil
}
