package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/gen/emit"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

func runEmit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("emit", stderr)
	dir := fs.String("manifests", "manifests", "folder of recorded manifests")
	out := fs.String("out", "generated", "folder to generate into")
	var m modelFlags
	m.register(fs, "also freeze semantic vectors of every tool")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	var opts emit.Options
	mod, code := m.open("emit", stdout, stderr)
	if code != exitOK {
		return code
	}
	if mod != nil {
		defer mod.embedder.Close()
		opts.Vectors = &emit.VectorOptions{Embedder: mod.embedder, Model: mod.name, SHA256: mod.sha256}
	}
	if err := emit.RunWith(*dir, *out, opts); err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: %v\n", err)
		return exitFail
	}
	// RunWith read the same folder successfully just now.
	if ms, err := manifest.ReadDir(*dir); err == nil {
		for _, w := range emit.Warnings(ms) {
			fmt.Fprintf(stderr, "kiln-gen emit: warning: %s\n", w)
		}
	}
	fmt.Fprintf(stdout, "emitted %s from %s\n", *out, *dir)
	if mod != nil {
		fmt.Fprintf(stdout, "froze semantic vectors with %s (sha256 %s)\n", mod.name, mod.sha256)
	}
	return exitOK
}
