package workspace

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecMain is "kiln workspace-exec SPEC": it applies the confinement SPEC
// describes to its own process and then execs bash -c with the command.
// Landlock binds this process and everything it starts, and only them:
// kiln itself stays unconfined. With Reap it confines nothing itself: it
// runs workspace-exec again, without Reap, as a supervised child
// (supervise). It returns only on failure, or with Reap the command's
// exit status.
func ExecMain(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "kiln workspace-exec is started by kiln's workspace Bash tool, not by hand")
		return 2
	}
	var spec execSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fmt.Fprintf(stderr, "kiln workspace-exec: bad spec: %v\n", err)
		return 2
	}
	// Die with kiln even if the namespace setup made the parent's
	// Pdeathsig not apply here. Without namespaces, end the command's
	// processes first (supervise's SIGTERM).
	deathsig := syscall.SIGKILL
	if spec.Reap {
		deathsig = syscall.SIGTERM
	}
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathsig), 0, 0, 0)
	if spec.Reap {
		return supervise(spec, stderr)
	}
	if spec.Landlock {
		if err := restrict(spec); err != nil {
			fmt.Fprintf(stderr, "kiln workspace-exec: Landlock: %v; the command was not run\n", err)
			return 126
		}
	}
	if err := os.Chdir(spec.Root); err != nil {
		fmt.Fprintf(stderr, "kiln workspace-exec: cannot enter the workspace root: %v\n", err)
		return 126
	}
	bash := "/bin/bash"
	if _, err := os.Stat(bash); err != nil {
		bash = "/usr/bin/bash"
	}
	err := syscall.Exec(bash, []string{"bash", "-c", spec.Command}, spec.Env)
	fmt.Fprintf(stderr, "kiln workspace-exec: exec bash: %v\n", err)
	return 127
}
