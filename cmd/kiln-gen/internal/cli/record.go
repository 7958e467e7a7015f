package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/kilnmcp/kiln/gen/record"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/version"
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlags("record", stderr)
	cfgPath := flags.String("config", "kiln.yaml", "config file declaring the backends")
	dir := flags.String("manifests", "manifests", "folder to write manifests into")
	prune := flags.Bool("prune", false, "delete the manifests of backends the config does not declare (without it they are listed and kept)")
	strict := flags.Bool("strict", false, "exit non-zero when a recorded manifest has a poisoning finding its backend's accept_findings does not accept (the manifests are written either way, for review)")
	if flags.Parse(args) != nil {
		return exitUsage
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return exitUsage
	}
	// The manifests before this recording are what description growth is
	// judged against; a first recording has none.
	prev, err := manifest.ReadDir(*dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "kiln-gen record: %v\n", err)
		return exitFail
	}
	if err := record.Run(ctx, cfg, *dir, record.Options{Progress: stdout, Version: version.String(), Prune: *prune}); err != nil {
		fmt.Fprintf(stderr, "kiln-gen record: %v\n", err)
		return exitFail
	}
	ms, err := manifest.ReadDir(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen record: %v\n", err)
		return exitFail
	}
	rev := checkPoison(ms, prev, cfg.AcceptedFindings())
	rev.print(stdout)
	if *strict && len(rev.kept) > 0 {
		fmt.Fprintln(stderr, rev.strictFailure("record"))
		return exitFail
	}
	return exitOK
}
