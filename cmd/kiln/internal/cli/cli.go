// Package cli implements kiln's subcommands, one per file, so tests can run
// them with buffers instead of a process.
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/version"
)

// workerCommand is the hidden subcommand that runs one sandbox worker.
const workerCommand = "sandbox-worker"

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// Run executes one kiln invocation and returns its exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdin, stdout, stderr)
	case "connect":
		return runConnect(ctx, args[1:], stdin, stdout, stderr)
	case workerCommand:
		// Hidden: kiln serve starts it to run call_tool_chain programs.
		in, out, release := rawStdio(stdin, stdout)
		defer release()
		return sandbox.ServeWorker(in, out, stderr)
	case workspaceExec: // hidden: how a workspace's Bash confines itself
		return runWorkspaceExec(args[1:], stderr)
	case "auth":
		return runAuth(ctx, args[1:], stdout, stderr)
	case "policy":
		return runPolicy(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "kiln", version.String())
		return exitOK
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "kiln: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: kiln <command> [flags]

commands:
  serve     serve MCP over stdio (default) or HTTP (--http ADDR)
  connect   serve MCP over stdio through a shared kiln daemon, started on demand
  auth      log in to, check or log out of backends' OAuth servers (kiln auth -h)
  policy    explain which policies: rule decides a tool for an identity (kiln policy explain)
  version   print the version

Run kiln serve -h for its flags.
`)
}
