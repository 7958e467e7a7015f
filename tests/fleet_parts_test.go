//go:build e2e

package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// needBin finds a Debian package's program the fleet test runs as a real
// part; it skips without it, or fails under CI=true, where a missing part
// means a broken setup (.ci/run installs redis-server and haproxy).
func needBin(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH; CI must install Debian's %s package (.ci/run does)", name, pkg)
		}
		t.Skipf("%s is not on PATH; install it (apt-get install %s) to run the fleet test", name, pkg)
	}
	return p
}

// freePort finds a loopback port nobody listens on. Replicas need fixed
// ports: HAProxy's config names them, and a restarted replica comes back
// on its own.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// replica is one `kiln serve --http` of the fleet.
type replica struct {
	name   string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	log    strings.Builder
}

func (r *replica) base() string { return fmt.Sprintf("http://127.0.0.1:%d", r.port) }

func (r *replica) logged() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// startReplica runs kiln on cfg at port and waits until /readyz says ready.
func startReplica(t *testing.T, name, cfg string, port int) *replica {
	t.Helper()
	r := &replica{name: name, port: port, exited: make(chan struct{})}
	r.cmd = exec.Command(kilnBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:"+strconv.Itoa(port))
	r.cmd.Dir = repoRoot(t)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			r.mu.Lock()
			r.log.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if !once && listenRE.MatchString(sc.Text()) {
				once = true
				close(listening)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() { r.stop(t, syscall.SIGKILL) })
	select {
	case <-listening:
	case <-r.exited:
		t.Fatalf("replica %s exited at start:\n%s", name, r.logged())
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not listen within 30s:\n%s", name, r.logged())
	}
	waitReady(t, r.base())
	return r
}

// stop signals the replica and waits for it to exit (at most 30s).
func (r *replica) stop(t *testing.T, sig syscall.Signal) {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
		t.Errorf("replica %s did not exit within 30s of %v", r.name, sig)
	}
}

// startHAProxy runs a real HAProxy on front that balances the replicas
// round robin, keeps each MCP session on the replica that issued its
// Mcp-Session-Id, sends nothing to a replica whose /readyz fails, and
// names the replica that answered in X-Kiln-Replica. retry-on
// empty-response is what makes a rolling restart lossless: a replica
// shutting down closes its idle keep-alive connections, and HAProxy may
// have just sent a request on one; without it that request fails (3 of
// about 600 calls in a run without it). It also replays a request whose
// replica was killed before answering, so use it where tool calls may run
// twice.
func startHAProxy(t *testing.T, bin string, front int, rs []*replica) {
	t.Helper()
	var servers strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&servers, "  server %s 127.0.0.1:%d check\n", r.name, r.port)
	}
	cfg := fmt.Sprintf(`global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  option redispatch 1
  retries 3
  retry-on conn-failure empty-response
frontend mcp
  bind 127.0.0.1:%d
  default_backend kiln
backend kiln
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 200ms fall 1 rise 1
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(Mcp-Session-Id)
  stick store-response res.hdr(Mcp-Session-Id)
  http-response set-header X-Kiln-Replica %%s
%s`, front, servers.String())
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, out}, lockedWriter{&mu, out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("haproxy exited at start:\n%s", out)
		case <-deadline:
			t.Fatal("haproxy did not answer /readyz within 20s")
		case <-time.After(50 * time.Millisecond):
		}
		if res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", front)); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// replicaTap records which replica answered last (HAProxy's
// X-Kiln-Replica header) for one client; it wraps the real transport.
type replicaTap struct {
	mu   sync.Mutex
	last string
}

func (rt *replicaTap) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		if name := res.Header.Get("X-Kiln-Replica"); name != "" {
			rt.mu.Lock()
			rt.last = name
			rt.mu.Unlock()
		}
	}
	return res, err
}

func (rt *replicaTap) replica() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.last
}

// rawInitialize starts a stateful session through base with plain HTTP and
// returns its id and the replica that issued it.
func rawInitialize(ctx context.Context, base string) (sid, replica string, err error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fleet-probe","version":"1"}}}`
	res, err := rawPost(ctx, base, "", body)
	if err != nil {
		return "", "", err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("initialize: %s", res.Status)
	}
	return res.Header.Get("Mcp-Session-Id"), res.Header.Get("X-Kiln-Replica"), nil
}

func rawPost(ctx context.Context, base, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return http.DefaultClient.Do(req)
}
