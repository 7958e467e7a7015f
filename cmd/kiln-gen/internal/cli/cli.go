// Package cli implements kiln-gen's subcommands, one per file, so tests can
// run them with buffers instead of a process.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/version"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and found a problem (drift, failed backend)
	exitUsage = 2
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"record", "connect to every enabled backend and write manifests/<backend>.json", runRecord},
		{"emit", "generate generated/ from manifests/ (offline, deterministic)", runEmit},
		{"diff", "compare live backends with manifests/ and print the schema drift (exit 1 on drift)", runDiff},
		{"eval", "measure search quality on a tool-retrieval dataset", runEval},
		{"version", "print the version", runVersion},
	}
}

// Run executes one kiln-gen invocation and returns its exit code.
func Run(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		return runVersion(ctx, nil, stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "kiln-gen: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: kiln-gen <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun kiln-gen <command> -h for a command's flags.")
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kiln-gen "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func loadConfig(path string, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen: %v\n", err)
		return nil, false
	}
	return cfg, true
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "kiln-gen", version.String())
	return exitOK
}
