package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kilnmcp/kiln/gen/emit"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

func runEmit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("emit", stderr)
	dir := fs.String("manifests", "manifests", "folder of recorded manifests")
	out := fs.String("out", "generated", "folder to generate into")
	vectors := fs.String("vectors", "", "word-vector file (GloVe text or wink JSON) to freeze the static tier from (default: gateway.vectors.file of --config)")
	top := fs.Int("vectors-top", 0, "frequent words the static tier keeps besides the tools' (default: gateway.vectors.top of --config, else 30000)")
	strict := fs.Bool("strict", false, "exit non-zero when a manifest has a poisoning finding that the accept config does not accept (make generate passes it under CI)")
	acceptCfg := fs.String("accept-config", "kiln.yaml", "config whose backends.NAME.accept_findings accept poisoning findings")
	var m modelFlags
	m.register(fs, "also freeze semantic vectors of every tool")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "accept-config" })
	// Checked before emitting, so --strict leaves generated/ as it was.
	// emit has no previous manifest: description growth is judged by record
	// and diff, every other rule here.
	ms, err := manifest.ReadDir(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: %v\n", err)
		return exitFail
	}
	rev := checkPoison(ms, nil, nil)
	if len(rev.kept) > 0 || named {
		accept, ok := acceptLists(*acceptCfg, named, stderr)
		if !ok {
			return exitUsage
		}
		rev = checkPoison(ms, nil, accept)
	}
	if *strict && len(rev.kept) > 0 {
		rev.print(stdout)
		fmt.Fprintln(stderr, rev.strictFailure("emit"))
		return exitFail
	}
	var opts emit.Options
	mod, code := m.open("emit", stdout, stderr)
	if code != exitOK {
		return code
	}
	if *vectors == "" {
		*vectors = m.vectors.File
	}
	if *top <= 0 {
		*top = cmp.Or(m.vectors.Top, static.DefaultTop)
	}
	if *vectors != "" {
		if opts.Static, code = staticOptions(*vectors, *top, stderr); code != exitOK {
			return code
		}
	}
	if mod != nil {
		defer mod.embedder.Close()
		opts.Vectors = &emit.VectorOptions{Embedder: mod.embedder, Model: mod.name, SHA256: mod.sha256}
	}
	if err := emit.RunWith(*dir, *out, opts); err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: %v\n", err)
		return exitFail
	}
	for _, w := range emit.Warnings(ms) {
		fmt.Fprintf(stderr, "kiln-gen emit: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "emitted %s from %s\n", *out, *dir)
	if mod != nil {
		fmt.Fprintf(stdout, "froze semantic vectors with %s (sha256 %s)\n", mod.name, mod.sha256)
	}
	if o := opts.Static; o != nil {
		fmt.Fprintf(stdout, "froze static word vectors from %s (sha256 %s): the tools' words and the %d most frequent\n", o.Source, o.SHA256, o.Top)
	}
	rev.print(stdout)
	return exitOK
}

// staticOptions reads the word-vector file at path for emit.
func staticOptions(path string, top int, stderr io.Writer) (*emit.StaticOptions, int) {
	sha, err := semantic.FileSHA256(path)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: word vectors: %v\n", err)
		return nil, exitUsage
	}
	raw, err := static.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: %v\n", err)
		return nil, exitFail
	}
	return &emit.StaticOptions{Raw: raw, Source: filepath.Base(path), SHA256: sha, Top: top}, exitOK
}
