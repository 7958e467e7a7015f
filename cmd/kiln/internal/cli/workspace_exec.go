package cli

import (
	"io"

	"github.com/kilnmcp/kiln/runtime/workspace"
)

// workspaceExec is the hidden subcommand a workspace backend re-executes
// kiln with to run one Bash command under Landlock and its own namespaces,
// so the one kiln binary ships the confinement too. Not in usage: people
// never run it by hand.
const workspaceExec = workspace.ExecCommand

// runWorkspaceExec returns only when the command could not be started.
func runWorkspaceExec(args []string, stderr io.Writer) int {
	return workspace.ExecMain(args, stderr)
}
