package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/gen/record"
	"github.com/kilnmcp/kiln/runtime/version"
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", stderr)
	cfgPath := fs.String("config", "kiln.yaml", "config file declaring the backends")
	dir := fs.String("manifests", "manifests", "folder to write manifests into")
	prune := fs.Bool("prune", false, "delete the manifests of backends the config does not declare (without it they are listed and kept)")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return exitUsage
	}
	if err := record.Run(ctx, cfg, *dir, record.Options{Progress: stdout, Version: version.String(), Prune: *prune}); err != nil {
		fmt.Fprintf(stderr, "kiln-gen record: %v\n", err)
		return exitFail
	}
	return exitOK
}
