//go:build e2e

package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// repoRoot is the module root: tests run from tests/.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// kilnBin returns bin/kiln from $KILN_BIN (what make e2e passes) or builds
// the binaries once into a temporary folder.
func kilnBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv("KILN_BIN"); dir != "" {
			binDir = dir
			return
		}
		binDir, buildErr = os.MkdirTemp("", "kiln-e2e-bin")
		if buildErr != nil {
			return
		}
		for _, pkg := range []string{"kiln", "kiln-gen"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, pkg), "./cmd/"+pkg)
			cmd.Dir = repoRoot(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "kiln")
}

func TestMain(m *testing.M) {
	root, _ := filepath.Abs("..")
	if _, err := os.Stat(filepath.Join(root, "tests/node_modules/@modelcontextprotocol/server-everything")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the reference MCP servers are not installed; run `make peers` (npm ci in tests/)")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testWriter sends a process's stderr to the test log, so a failing test
// shows what kiln said.
type testWriter struct {
	t      testing.TB
	prefix string
}

func (w testWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.Logf("%s: %s", w.prefix, line)
	}
	return len(p), nil
}

var listenRE = regexp.MustCompile(`serving MCP at (http://[^/\s]+)/mcp`)

// ownState is the environment of a kiln started with args: on the
// embedded default config (no --config) its state folder would be the
// checkout's .kiln, shared by every test and every run, whose usage
// counts then reorder search answers; it gets a folder of the test's own.
func ownState(t testing.TB, args []string) []string {
	t.Helper()
	env := os.Environ()
	if !slices.Contains(args, "--config") {
		env = append(env, "KILN_GATEWAY_STATE_DIR="+t.TempDir())
	}
	return env
}

// startHTTP runs `kiln serve --http 127.0.0.1:0` and returns its base URL
// once it prints the address it listens on.
func startHTTP(t testing.TB, args ...string) string {
	t.Helper()
	return startHTTPEnv(t, "", args...)
}

// startHTTPEnv is startHTTP with env (NAME=VALUE, or empty) added to
// kiln's environment.
func startHTTPEnv(t testing.TB, env string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kilnBin(t), append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = ownState(t, args)
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			t.Log("kiln: " + line)
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		return u
	case <-exited:
		t.Fatal("kiln serve --http exited before listening; its stderr is logged above")
	case <-time.After(30 * time.Second):
		t.Fatal("kiln serve --http did not report its address within 30s")
	}
	return ""
}

// callReady calls a tool, retrying while kiln reports its backend is still
// starting or reconnecting (backends connect in the background by design,
// and a slow machine can make a first connect time out).
func callReady(t *testing.T, s session, name string, args map[string]any) result {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := s.Call(t.Context(), name, args)
		if err != nil {
			t.Fatalf("%s(%v): %v", name, args, err)
		}
		transient := strings.Contains(r.Text(), "still starting") || strings.Contains(r.Text(), "kiln retries at")
		if !r.IsError || !transient || time.Now().After(deadline) {
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
}
