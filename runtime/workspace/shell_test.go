package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// procsWith lists live processes whose command line contains s.
func procsWith(t *testing.T, s string) []string {
	t.Helper()
	out, err := listProcs(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// listProcs is procsWith for code without a *testing.T (a helper process).
func listProcs(s string) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// marker returns a sleep duration unique to this test, to find its
// processes in /proc.
func marker() string { return fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007) }

// spawnTree is a command that leaves children behind in its group, in a
// new session (setsid) and in the background.
func spawnTree(m string) string {
	return fmt.Sprintf("sleep %s & setsid sleep %s & (sleep %s &); echo started; sleep %s", m, m, m, m)
}

// inBothModes runs test in a workspace with its own PID namespace and in
// one without (as where the kernel refuses user namespaces), where
// workspace-exec itself ends the command's descendants (supervise).
func inBothModes(t *testing.T, test func(t *testing.T, f *fixture)) {
	for _, fallback := range []bool{false, true} {
		name := "namespaces"
		if fallback {
			name = "no namespaces"
		}
		t.Run(name, func(t *testing.T) {
			if fallback {
				test(t, fallbackFixture(t))
			} else {
				test(t, newFixture(t, nil))
			}
		})
	}
}

func TestTimeoutKillsEverything(t *testing.T) { inBothModes(t, testTimeoutKillsEverything) }

func testTimeoutKillsEverything(t *testing.T, f *fixture) {
	m := marker()
	// 2 s, not less: under a loaded test run (race lane beside language
	// servers) bash under Landlock once took over 500 ms to echo.
	text, isErr := f.call("Bash", map[string]any{"command": spawnTree(m), "timeout": 2000})
	if !isErr || !strings.Contains(text, "started") || !strings.Contains(text, "exit code: 124 (timed out after 2s") {
		t.Fatalf("Bash = %q, isError %v", text, isErr)
	}
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("processes outlived the timeout: %v", left)
	}
}

func TestCancelKillsEverything(t *testing.T) { inBothModes(t, testCancelKillsEverything) }

func testCancelKillsEverything(t *testing.T, f *fixture) {
	m := marker()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Cancel once the command's processes exist.
		for len(procsWith(t, "sleep "+m)) < 4 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	text, isErr := f.callCtx(ctx, "Bash", map[string]any{"command": spawnTree(m)})
	if !isErr || !strings.Contains(text, "exit code: 124 (cancelled by the client") {
		t.Fatalf("Bash = %q, isError %v", text, isErr)
	}
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("processes outlived the cancellation: %v", left)
	}
}

func TestBackgroundShells(t *testing.T) { inBothModes(t, testBackgroundShells) }

func testBackgroundShells(t *testing.T, f *fixture) {
	fifo := filepath.Join(f.root, "go-on")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	text := f.expectOK("Bash", map[string]any{"command": "echo one; read x < go-on; echo two", "run_in_background": true})
	if !strings.Contains(text, "bash_id bash_1") {
		t.Fatalf("Bash background = %q", text)
	}
	// Incremental reads: "one" once, then only what came after.
	var got string
	for !strings.Contains(got, "one") {
		got += f.expectOK("BashOutput", map[string]any{"bash_id": "bash_1"})
	}
	if !strings.Contains(got, "status: running") {
		t.Fatalf("BashOutput = %q", got)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = ""
	for !strings.Contains(got, "finished") {
		got += f.expectOK("BashOutput", map[string]any{"bash_id": "bash_1", "filter": "t"})
		if strings.Contains(got, "one") {
			t.Fatalf("second read repeated old output: %q", got)
		}
	}
	if !strings.Contains(got, "two") || !strings.Contains(got, "exit code: 0") {
		t.Fatalf("final BashOutput = %q", got)
	}
	// A finished shell stays readable: its status, nothing read twice.
	if again := f.expectOK("BashOutput", map[string]any{"bash_id": "bash_1"}); !strings.Contains(again, "status: finished, exit code: 0") || strings.Contains(again, "two") {
		t.Fatalf("BashOutput after the last read = %q", again)
	}

	m := marker()
	f.expectOK("Bash", map[string]any{"command": spawnTree(m), "run_in_background": true})
	f.expectOK("KillShell", map[string]any{"shell_id": "bash_2"})
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("KillShell left processes: %v", left)
	}

	m = marker()
	f.expectOK("Bash", map[string]any{"command": spawnTree(m), "run_in_background": true})
	for len(procsWith(t, "sleep "+m)) < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	if left := procsWith(t, "sleep "+m); len(left) > 0 {
		t.Fatalf("processes outlived the workspace: %v", left)
	}
	f.expectErr("Bash", map[string]any{"command": "true"}, "shutting down")
}

// A command's descendants end with it, those that left its process group
// (setsid) too, as its PID namespace's end takes them where there is one.
func TestCommandEndEndsItsDescendants(t *testing.T) {
	inBothModes(t, func(t *testing.T, f *fixture) {
		m := marker()
		text := f.expectOK("Bash", map[string]any{"command": fmt.Sprintf("setsid sleep %s & (sleep %s &); sleep %s & echo started", m, m, m)})
		if !strings.Contains(text, "started") || !strings.Contains(text, "exit code: 0") {
			t.Fatalf("Bash = %q", text)
		}
		if left := procsWith(t, "sleep "+m); len(left) > 0 {
			t.Fatalf("processes outlived the command: %v", left)
		}
	})
}

// A background shell ends with the client session that started it; other
// sessions' shells keep running.
func TestBackgroundShellsEndWithTheirSession(t *testing.T) {
	f := newFixture(t, nil)
	mine, theirs := marker(), marker()
	start := func(session, m string) {
		t.Helper()
		ctx := WithSession(t.Context(), session)
		if text, isErr := f.callCtx(ctx, "Bash", map[string]any{"command": spawnTree(m), "run_in_background": true}); isErr {
			t.Fatalf("Bash background: %s", text)
		}
		for len(procsWith(t, "sleep "+m)) < 4 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	start("session-a", mine)
	start("session-b", theirs)
	f.w.EndSession("session-a")
	// Wait for the killed processes to be reaped (a zombie still has its
	// cmdline until then).
	deadline := time.Now().Add(5 * time.Second)
	for len(procsWith(t, "sleep "+mine)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := procsWith(t, "sleep "+mine); len(left) > 0 {
		t.Fatalf("the ended session's shell outlived it: %v", left)
	}
	if len(procsWith(t, "sleep "+theirs)) == 0 {
		t.Fatal("another session's shell was killed too")
	}
	// The shell itself is reaped after its children: until then it is
	// still running.
	out, _ := f.call("BashOutput", map[string]any{"bash_id": "bash_1"})
	for strings.Contains(out, "status: running") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		out, _ = f.call("BashOutput", map[string]any{"bash_id": "bash_1"})
	}
	if !strings.Contains(out, "the client session that started it ended") {
		t.Errorf("BashOutput of the ended session's shell = %q", out)
	}
}
