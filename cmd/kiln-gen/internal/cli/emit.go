package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/gen/emit"
)

func runEmit(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("emit", stderr)
	dir := fs.String("manifests", "manifests", "folder of recorded manifests")
	out := fs.String("out", "generated", "folder to generate into")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if err := emit.Run(*dir, *out); err != nil {
		fmt.Fprintf(stderr, "kiln-gen emit: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "emitted %s from %s\n", *out, *dir)
	return exitOK
}
