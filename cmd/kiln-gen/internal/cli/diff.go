package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/cmd/kiln-gen/internal/diff"
	"github.com/kilnmcp/kiln/gen/record"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/version"
)

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diff", stderr)
	cfgPath := fs.String("config", "kiln.yaml", "config file declaring the backends")
	dir := fs.String("manifests", "manifests", "folder of committed manifests")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return exitUsage
	}
	committed, err := manifest.ReadDir(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen diff: %v\n", err)
		return exitUsage
	}
	var live []*manifest.Manifest
	failed := false
	for _, o := range record.Snapshot(ctx, cfg, record.Options{Progress: stderr, Version: version.String()}) {
		if o.Err != nil {
			failed = true
			continue
		}
		live = append(live, o.Manifest)
	}
	// Compare only backends that answered: one that failed to start is
	// reported above, not as "every tool removed".
	var old []*manifest.Manifest
	for _, m := range committed {
		if b, declared := cfg.Backend(m.Backend); declared && (!b.Enabled || !answered(live, m.Backend)) {
			continue
		}
		old = append(old, m)
	}
	changes := diff.Backends(old, live)
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "no drift: live backends match", *dir)
	} else if err := diff.Render(stdout, changes); err != nil {
		fmt.Fprintf(stderr, "kiln-gen diff: %v\n", err)
		return exitFail
	}
	if failed {
		fmt.Fprintln(stderr, "kiln-gen diff: some backends could not be reached; their drift is unknown")
		return exitFail
	}
	if len(changes) > 0 {
		fmt.Fprintln(stdout)
		if err := diff.RenderServing(stdout, changes, driftModes(cfg), "make generate"); err != nil {
			fmt.Fprintf(stderr, "kiln-gen diff: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "\nRun `make generate` to record these changes, then review the manifests/ diff.\n")
		return exitFail
	}
	return exitOK
}

func answered(live []*manifest.Manifest, name string) bool {
	for _, m := range live {
		if m.Backend == name {
			return true
		}
	}
	return false
}

// driftModes reads each backend's drift mode from the config, and which
// key sets it.
func driftModes(cfg *config.Config) diff.Mode {
	return func(name string) (string, string) {
		mode, explicit := cfg.DriftMode(name)
		source := "the default"
		if b, ok := cfg.Backend(name); ok && b.Drift != "" {
			source = "backends." + name + ".drift"
		} else if explicit {
			source = "gateway.drift"
		}
		return string(mode), source
	}
}
