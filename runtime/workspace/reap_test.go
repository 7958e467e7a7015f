package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
		if !strings.HasSuffix(text, want) {
			t.Errorf("Bash %q = %q, want it to end %q", cmd, text, want)
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
