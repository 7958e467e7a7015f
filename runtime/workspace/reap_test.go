package workspace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Without namespaces bash is forked by workspace-exec instead of exec'd
// (supervise): it must still inherit the Landlock domain of the thread
// restrict bound, or the fallback would run commands unconfined.
func TestFallbackCommandsStayConfined(t *testing.T) {
	if kernelABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	f := fallbackFixture(t)
	for _, cmd := range []string{
		"cat " + f.secret,
		"echo x > " + filepath.Join(f.outside, "made.txt"),
	} {
		text, _ := f.call("Bash", map[string]any{"command": cmd})
		if strings.Contains(text, secretText) || strings.HasSuffix(text, "exit code: 0") {
			t.Errorf("Bash %q got out: %s", cmd, text)
		}
	}
	if _, err := os.Stat(filepath.Join(f.outside, "made.txt")); err == nil {
		t.Error("a file was made outside the root")
	}
	// And it still runs what it may.
	if text := f.expectOK("Bash", map[string]any{"command": "echo inside > in.txt && cat in.txt"}); !strings.Contains(text, "inside") {
		t.Errorf("Bash inside the root = %q", text)
	}
}

// Exit statuses pass through workspace-exec unchanged: a plain code, and
// 128+n for a command killed by signal n.
func TestFallbackExitStatus(t *testing.T) {
	f := fallbackFixture(t)
	for cmd, want := range map[string]string{
		"exit 3":        "exit code: 3",
		"kill -TERM $$": "exit code: 143",
		"true":          "exit code: 0",
	} {
		text, _ := f.call("Bash", map[string]any{"command": cmd})
		if !strings.HasPrefix(text, want) {
			t.Errorf("Bash %q = %q, want it to start %q", cmd, text, want)
		}
	}
}

// Orphans a running command leaves (a subshell's background child) are
// reaped as they end, not only when bash does: a long background shell
// that keeps starting such processes would otherwise fill the PID table
// with zombies. (In a PID namespace bash, its first process, reaps
// them, and /proc's PIDs are not the command's.)
func TestFallbackReapsOrphansWhileTheCommandRuns(t *testing.T) {
	f := fallbackFixture(t)
	// The command watches its orphan for some seconds: gone
	// (reaped) passes, a zombie fails at once.
	cmd := `(true & echo $! > orphan.pid); o=$(cat orphan.pid)
for i in $(seq 1 500); do
  [ -e /proc/$o ] || { echo reaped; exit 0; }
  case "$(grep State /proc/$o/status)" in *zombie*) echo zombie; exit 1;; esac
  sleep 0.01
done
echo still running`
	if text := f.expectOK("Bash", map[string]any{"command": cmd}); !strings.Contains(text, "reaped") {
		t.Fatalf("Bash = %q, want its orphan reaped", text)
	}
}

// When kiln dies (here: the thread that started workspace-exec ends, which
// is what its parent-death signal watches), the command's processes end
// too, those that left its group included.
func TestFallbackCommandsEndWithKiln(t *testing.T) {
	f := fallbackFixture(t)
	m := marker()
	killLeftovers(t, "sleep "+m)
	cmd, err := f.w.command(fmt.Sprintf("sleep %s & setsid sleep %s & (sleep %s &); sleep %s", m, m, m, m))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan error), make(chan struct{})
	// A goroutine that returns while locked ends its thread, unless that
	// is the main thread, which the runtime keeps: that one stays locked
	// by a goroutine of its own until the end, so another starts cmd.
	var start func()
	start = func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			go start()
			<-release
			runtime.UnlockOSThread()
			return
		}
		started <- cmd.Start()
		<-release
	}
	go start()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	for len(procsWith(t, "sleep "+m)) < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	_ = cmd.Wait()
	deadline := time.Now().Add(2 * reapBound)
	for len(procsWith(t, "sleep "+m)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("processes outlived kiln: %v", left)
	}
}

// A command cannot end workspace-exec, which would leave the processes
// it started running: Landlock's signal scope (ABI 6) keeps the command
// from signaling a process outside its domain, and workspace-exec stays
// outside it.
func TestFallbackCommandCannotKillItsSupervisor(t *testing.T) {
	if kernelABI() < 6 {
		t.Skip("the kernel's Landlock has no signal scope")
	}
	f := fallbackFixture(t)
	m := marker()
	killLeftovers(t, "sleep "+m)
	text, _ := f.call("Bash", map[string]any{"command": fmt.Sprintf("setsid sleep %s & kill -KILL $PPID; echo kill: $?", m)})
	if !strings.Contains(text, "kill: 1") {
		t.Errorf("Bash = %q, want the kill refused", text)
	}
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("processes outlived the command: %v", left)
	}
}

// fallbackFixture is a workspace that runs commands as where the kernel
// refuses user namespaces (supervise).
func fallbackFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, nil)
	f.w.confine.noNamespaces.Store(true)
	return f
}

// killLeftovers kills, when the test ends, processes whose command line
// holds s that a failed test left behind.
func killLeftovers(t *testing.T, s string) {
	t.Cleanup(func() {
		for _, p := range procsWith(t, s) {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// reapHelperCommand runs the test binary as reapHelper: a child subreaper
// like workspace-exec's supervisor, whose pidfd_open and /proc reads the
// test can replace, which it cannot in a workspace-exec process.
const reapHelperCommand = "reap-helper"

// reapHelper starts spawnTree's processes (marker args[0]), then ends them
// with endDescendants and exits 0. With args[1] "no-pidfd" pidfd_open
// fails with ENOSYS, as on kernels before 5.3; with a PID as args[2],
// reading its own children in /proc lists that process too, as a read
// whose child was reaped and its PID reused by another process would.
func reapHelper(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "reap-helper: want MARKER pidfd|no-pidfd [STALE-PID]")
		return 2
	}
	m := args[0]
	if args[1] == "no-pidfd" {
		pidfdOpen = func(int, int) (int, error) { return -1, unix.ENOSYS }
	}
	if len(args) > 2 {
		stale, err := strconv.Atoi(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "reap-helper:", err)
			return 2
		}
		self := os.Getpid()
		childrenOf = func(pid int) []int {
			if pid == self {
				return append(children(pid), stale)
			}
			return children(pid)
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "reap-helper:", err)
		return 1
	}
	cmd := exec.Command("bash", "-c", spawnTree(m))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "reap-helper:", err)
		return 1
	}
	for {
		procs, err := listProcs("sleep " + m)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reap-helper:", err)
			return 1
		}
		if len(procs) >= 4 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	endDescendants(cmd.Process.Pid, time.Now().Add(reapBound))
	return 0
}

// runReapHelper runs reapHelper and fails the test if it does not exit 0.
func runReapHelper(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), os.Args[0], append([]string{reapHelperCommand}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("reap helper: %v: %s", err, out)
	}
}

// TestEndDescendants: workspace-exec's supervisor ends every descendant
// (in bash's group, in a session of its own, orphaned), signaling them
// through pidfds and, where pidfd_open fails with ENOSYS, by PID as before.
func TestEndDescendants(t *testing.T) {
	for _, mode := range []string{"pidfd", "no-pidfd"} {
		t.Run(mode, func(t *testing.T) {
			m := marker()
			killLeftovers(t, "sleep "+m)
			runReapHelper(t, m, mode)
			if left := procsWith(t, "sleep "+m); len(left) > 0 {
				t.Fatalf("processes outlived endDescendants: %v", left)
			}
		})
	}
}

// TestEndDescendantsSparesAReusedPID: endDescendants killed every PID it
// read from /proc's children lists; a child reaped (by its own parent)
// between the read and the kill left its PID free, and the process that
// took it next was killed instead. A PID is now signaled through a pidfd
// opened on it, and only when that process is, once held, still the
// child of the process whose list named it. The helper's list of its
// own children names a process it did not start, as such a read would.
func TestEndDescendantsSparesAReusedPID(t *testing.T) {
	m, o := marker(), marker()
	killLeftovers(t, "sleep "+m)
	killLeftovers(t, "sleep "+o)
	other := exec.Command("sleep", o)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	runReapHelper(t, m, "pidfd", strconv.Itoa(other.Process.Pid))
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Errorf("the helper's own processes outlived endDescendants: %v", left)
	}
	if len(procsWith(t, "sleep "+o)) != 1 {
		t.Fatal("endDescendants killed a process that was not a descendant")
	}
}
