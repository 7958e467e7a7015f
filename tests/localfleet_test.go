//go:build e2e

package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeRun finds n consecutive free loopback ports and returns the first;
// deploy/local-fleet.sh takes one base port and uses the next five.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := freePort(t)
		ok := true
		for i := 1; i < n && ok; i++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// TestLocalFleetScript runs deploy/local-fleet.sh as a person would: the
// fleet answers MCP through HAProxy with sessions on its replicas, and
// Ctrl-C (SIGINT) stops every process it started and removes its folder.
func TestLocalFleetScript(t *testing.T) {
	needBin(t, "haproxy", "haproxy")
	needBin(t, "redis-server", "redis-server")
	needBin(t, "curl", "curl")
	base := freeRun(t, 6)
	tmp := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "deploy", "local-fleet.sh"))
	cmd.Env = append(os.Environ(), "KILN_FLEET_PORT="+strconv.Itoa(base), "KILN_BIN="+filepath.Dir(kilnBin(t)), "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t, "local-fleet"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			t.Log("local-fleet: " + sc.Text())
			if !once && strings.Contains(sc.Text(), "serving MCP at") {
				once = true
				close(serving)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-serving:
	case err := <-exited:
		t.Fatalf("local-fleet.sh exited before serving: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("local-fleet.sh did not serve within 90s")
	}

	front := fmt.Sprintf("http://127.0.0.1:%d", base)
	seen := map[string]bool{}
	for range 6 {
		_, replica, err := rawInitialize(t.Context(), front)
		if err != nil {
			t.Fatal(err)
		}
		seen[replica] = true
	}
	if len(seen) != 3 {
		t.Errorf("six sessions went to replicas %v; want all three", seen)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("local-fleet.sh did not stop within 60s of Ctrl-C")
	}
	for i := range 6 {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(base+i), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still answers after Ctrl-C: a process of the fleet outlived it", base+i)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "kiln-fleet.*")); len(left) > 0 {
		t.Errorf("local-fleet.sh left %v behind", left)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, front+"/readyz", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Errorf("the fleet still answers after Ctrl-C: %s", res.Status)
	}
}
