//go:build e2e

package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// daemonEnv is a private runtime folder per test, so each test's daemons
// live on sockets of their own and never meet another test's (or a
// developer's) daemon.
type daemonEnv struct {
	t   *testing.T
	bin string
	cfg string
	xdg string
}

func newDaemonEnv(t *testing.T) *daemonEnv {
	t.Helper()
	// A short folder: a unix socket path must stay under ~100 bytes.
	xdg, err := os.MkdirTemp("", "kd")
	if err != nil {
		t.Fatal(err)
	}
	e := &daemonEnv{t: t, bin: kilnBin(t), cfg: peerConfig(t, peerOptions{}), xdg: xdg}
	t.Cleanup(func() {
		e.stop()
		os.RemoveAll(xdg)
	})
	return e
}

func (e *daemonEnv) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = repoRoot(e.t)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+e.xdg)
	return cmd
}

// client starts an mcp-go stdio client on `kiln connect`.
func (e *daemonEnv) client(args ...string) session {
	e.t.Helper()
	return &mcpgoSession{e.clientWith(nil, args...)}
}

func (e *daemonEnv) clientWith(opts []mcpclient.ClientOption, args ...string) *mcpclient.Client {
	e.t.Helper()
	argv := append([]string{"connect", "--config", e.cfg}, args...)
	tr := transport.NewStdioWithOptions(e.bin, nil, argv,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := e.cmd(args...)
			cmd.Stderr = testWriter{e.t, "kiln connect"}
			return cmd, nil
		}))
	c := mcpclient.NewClient(tr, opts...)
	startMCPGo(e.t, c)
	return c
}

var statusRE = regexp.MustCompile(`kiln daemon pid (\d+) serves .*: (\d+) client sessions open\nsocket (\S+)`)

// status returns the daemon's pid and socket, or pid 0 when none runs.
func (e *daemonEnv) status() (pid int, socket string) {
	e.t.Helper()
	out, _ := e.cmd("connect", "--config", e.cfg, "--status").Output()
	m := statusRE.FindSubmatch(out)
	if m == nil {
		if !bytes.Contains(out, []byte("no kiln daemon")) {
			e.t.Fatalf("kiln connect --status printed %q", out)
		}
		return 0, ""
	}
	pid, _ = strconv.Atoi(string(m[1]))
	return pid, string(m[3])
}

func (e *daemonEnv) stop() {
	if out, err := e.cmd("connect", "--config", e.cfg, "--stop").CombinedOutput(); err != nil {
		e.t.Logf("kiln connect --stop: %v\n%s", err, out)
	}
}

// waitExit waits for a process that is not our child to exit, through a
// pidfd (which becomes readable when it does).
func waitExit(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == syscall.ESRCH {
		return
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	// poll is never restarted after a signal handler ran (signal(7)):
	// the exit of a client the killed daemon served, or the Go
	// runtime's preemption signal, interrupts it.
	deadline := time.Now().Add(within)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Until(deadline).Milliseconds()))
		if err == syscall.EINTR && time.Now().Before(deadline) {
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("process %d still runs after %s (poll: %v)", pid, within, err)
		}
		return
	}
}

// nodeDescendants counts the node processes below pid: the stdio
// backends kiln started (sandbox workers are kiln processes, not node).
func nodeDescendants(t *testing.T, pid int) int {
	t.Helper()
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	comm := map[int]string{}
	for _, ent := range entries {
		p, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
		comm[p] = s[strings.IndexByte(s, '(')+1 : end]
	}
	n := 0
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			if comm[c] == "node" {
				n++
			}
			walk(c)
		}
	}
	walk(pid)
	return n
}

// daemonsFor counts running `kiln serve --daemon` processes of a config.
func daemonsFor(t *testing.T, cfg string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(raw), "\x00")
		if len(args) > 2 && args[1] == "serve" && args[2] == "--daemon" && strings.Contains(string(raw), cfg) {
			n++
		}
	}
	return n
}

const daemonBackends = 3 // everything, filesystem, memory in peerConfig

// TestDaemonSharesBackends starts five clients (four mcp-go, one go-sdk)
// at once on `kiln connect` with no daemon running: exactly one daemon starts (the start lock), it
// runs one process per backend, and each client's call gets its own
// answer. Five `kiln serve` clients run five times the backends.
func TestDaemonSharesBackends(t *testing.T) {
	e := newDaemonEnv(t)
	const clients = 5
	sessions := make([]session, clients)
	var wg sync.WaitGroup
	for i := range clients {
		if i == clients-1 {
			// One go-sdk client, which probes server/discover (2026-07-28)
			// first, beside the mcp-go ones.
			wg.Go(func() {
				cmd := e.cmd("connect", "--config", e.cfg)
				cmd.Stderr = testWriter{t, "kiln connect"}
				sessions[i] = connectSDK(t, &sdk.CommandTransport{Command: cmd})
			})
			continue
		}
		wg.Go(func() { sessions[i] = e.client() })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, s := range sessions {
		wg.Go(func() {
			msg := fmt.Sprintf("client %d", i)
			res := callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": msg}))
			if res.IsError || !strings.Contains(res.Text(), "Echo: "+msg) {
				t.Errorf("client %d got %q, want its own echo %q", i, res.Text(), msg)
			}
		})
	}
	wg.Wait()
	pid, socket := e.status()
	if pid == 0 {
		t.Fatal("kiln connect --status finds no daemon while five clients are connected")
	}
	if n := daemonsFor(t, e.cfg); n != 1 {
		t.Errorf("%d daemons run for one config after five concurrent starts, want 1", n)
	}
	st, err := os.Stat(socket)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, err %v; want 0600", socket, st.Mode().Perm(), err)
	}
	if dir, err := os.Stat(filepath.Dir(socket)); err != nil || dir.Mode().Perm() != 0o700 {
		t.Errorf("socket folder mode %v, err %v; want 0700", dir.Mode().Perm(), err)
	}
	// Every client released the start lock, and its file went with it.
	if locks, _ := filepath.Glob(filepath.Join(filepath.Dir(socket), "*.lock")); len(locks) != 0 {
		t.Errorf("start lock files left after five concurrent starts: %v", locks)
	}
	shared := nodeDescendants(t, pid)
	if shared != daemonBackends {
		t.Errorf("the daemon runs %d backend processes for five clients, want %d (one per backend)", shared, daemonBackends)
	}

	// The same five clients, each on its own kiln serve.
	pids := make([]int, clients)
	for i := range clients {
		var cmd *exec.Cmd
		tr := transport.NewStdioWithOptions(e.bin, nil, []string{"serve", "--config", e.cfg},
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				cmd = e.cmd(args...)
				cmd.Stderr = testWriter{t, "kiln serve"}
				return cmd, nil
			}))
		s := startMCPGo(t, mcpclient.NewClient(tr))
		callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "x"}))
		pids[i] = cmd.Process.Pid
	}
	separate := 0
	for _, p := range pids {
		separate += nodeDescendants(t, p)
	}
	t.Logf("backend processes for %d clients: %d through kiln connect (one daemon), %d with one kiln serve each", clients, shared, separate)
	if separate != clients*daemonBackends {
		t.Errorf("five kiln serve run %d backend processes, want %d", separate, clients*daemonBackends)
	}
}

// TestDaemonIdleExit: a daemon with no client left exits after --idle and
// removes its socket; the next client starts a new one.
func TestDaemonIdleExit(t *testing.T) {
	e := newDaemonEnv(t)
	s := e.client("--idle", "1s")
	callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "a"}))
	pid, socket := e.status()
	if pid == 0 {
		t.Fatal("no daemon after a client connected")
	}
	s.Close()
	waitExit(t, pid, 30*time.Second)
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket %s still there after the daemon exited (err %v)", socket, err)
	}
	if p, _ := e.status(); p != 0 {
		t.Errorf("status reports daemon %d after the idle exit", p)
	}
	s = e.client("--idle", "1s")
	res := callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "b"}))
	if !strings.Contains(res.Text(), "Echo: b") {
		t.Errorf("call after a new start: %q", res.Text())
	}
	if p, _ := e.status(); p == 0 || p == pid {
		t.Errorf("daemon pid %d after the restart, want a new one (old %d)", p, pid)
	}
}

// TestDaemonStaleSocket: a daemon killed with SIGKILL leaves its socket
// file; the next client finds nobody answering, replaces it and works.
func TestDaemonStaleSocket(t *testing.T) {
	e := newDaemonEnv(t)
	s := e.client()
	callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "a"}))
	pid, socket := e.status()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid, 30*time.Second)
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("the killed daemon's socket should be left behind for this test: %v", err)
	}
	s2 := e.client()
	res := callReady(t, s2, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "after"}))
	if res.IsError || !strings.Contains(res.Text(), "Echo: after") {
		t.Errorf("call through a daemon started over a stale socket: %q", res.Text())
	}
	if p, _ := e.status(); p == 0 || p == pid {
		t.Errorf("daemon pid %d after the stale socket, want a new one (killed %d)", p, pid)
	}
	// The client of the killed daemon sees its server gone, not a hang.
	if _, err := s.Call(t.Context(), "list_tools_meta", map[string]any{}); err == nil {
		t.Error("a call through the killed daemon's relay succeeded")
	}
}

// TestDaemonOtherBuild: another build of kiln (here a copy of the binary)
// never relays to this build's daemon: it starts its own.
func TestDaemonOtherBuild(t *testing.T) {
	e := newDaemonEnv(t)
	s := e.client()
	callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "a"}))
	pid, socket := e.status()

	raw, err := os.ReadFile(e.bin)
	if err != nil {
		t.Fatal(err)
	}
	other := &daemonEnv{t: t, bin: filepath.Join(t.TempDir(), "kiln"), cfg: e.cfg, xdg: e.xdg}
	if err := os.WriteFile(other.bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.stop)
	s2 := other.client()
	callReady(t, s2, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "b"}))
	pid2, socket2 := other.status()
	if pid2 == 0 || pid2 == pid || socket2 == socket {
		t.Errorf("the other build relays to pid %d at %s; this build's daemon is pid %d at %s", pid2, socket2, pid, socket)
	}
}

// TestDaemonSamplingReachesItsClient: each connection is a client session
// of its own, so a backend's sampling request during a call reaches the
// client that made the call, not another client of the same daemon: on
// 2025-11-25 kiln sends the request on the connection, on 2026-07-28 it
// answers input-required.
func TestDaemonSamplingReachesItsClient(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e := newDaemonEnv(t)
			e.cfg = askConfig(t)
			clients := map[string]*mcpclient.Client{}
			for _, name := range []string{"ada", "bob"} {
				opts := []mcpclient.ClientOption{mcpclient.WithSamplingHandler(&asker{name: name})}
				if p.legacy {
					//lint:ignore SA1019 kiln sends requests on the connection to clients before 2026-07-28 only
					opts = append(opts, mcpclient.WithLegacyProtocolOnly())
				}
				clients[name] = e.clientWith(opts)
			}
			code := `{"tool": "everything.trigger-sampling-request", "arguments": {"prompt": "hi"}}`
			for _, name := range []string{"ada", "bob", "ada"} {
				r := callReady(t, &mcpgoSession{clients[name]}, "call_tool_chain", map[string]any{"code": code})
				if !strings.Contains(r.Text(), "sampled by "+name) {
					t.Errorf("%s's sampling call got %q, want its own answer", name, r.Text())
				}
			}
		})
	}
}

// TestDaemonShellsEndWithTheirSession: a background shell started through
// one kiln connect ends when that client closes stdin, while the daemon
// and its other clients go on.
func TestDaemonShellsEndWithTheirSession(t *testing.T) {
	e := newDaemonEnv(t)
	root := t.TempDir()
	e.cfg = filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(e.cfg, []byte(fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\nbackends:\n  repo:\n    transport: workspace\n    root: %s\n", t.TempDir(), root)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := e.client()
	first := e.client()
	m := fmt.Sprintf("62.%d", time.Now().UnixNano()%1000003)
	code := fmt.Sprintf(`{"tool":"repo.Bash","arguments":{"command":"sleep %s & sleep %s","run_in_background":true}}`, m, m)
	r, err := first.Call(t.Context(), "call_tool_chain", map[string]any{"code": code})
	if err != nil || r.IsError || !strings.Contains(r.Text(), "bash_id") {
		t.Fatalf("background Bash: %v %s", err, r.Text())
	}
	eventually(t, "the background shell's processes start", func() bool { return len(procsWith(t, "sleep "+m)) >= 2 })
	pid, _ := e.status()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the shell ends with its session", func() bool { return len(procsWith(t, "sleep "+m)) == 0 })
	// The shell's record turns to ended once its waiter has reaped it,
	// a moment after its processes are gone.
	eventually(t, "BashOutput from the other client says the session ended", func() bool {
		r, err = other.Call(t.Context(), "call_tool_chain", map[string]any{"code": `{"tool":"repo.BashOutput","arguments":{"bash_id":"bash_1"}}`})
		if err != nil {
			t.Fatalf("BashOutput from the other client: %v", err)
		}
		return strings.Contains(r.Text(), "the client session that started it ended")
	})
	if p, _ := e.status(); p != pid {
		t.Errorf("daemon pid %d after one client left, want %d still serving", p, pid)
	}
}

// TestDaemonStartFailureIsReported: a daemon that cannot start (here a
// pure-Go kiln asked for semantic search, refused after the config loads)
// makes kiln connect fail at once with the daemon's own words.
func TestDaemonStartFailureIsReported(t *testing.T) {
	e := newDaemonEnv(t)
	e.cfg = filepath.Join(t.TempDir(), "kiln.yaml")
	cfg := fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  semantic:\n    model: m.gguf\n    sha256: %s\n", t.TempDir(), strings.Repeat("ab", 32))
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := e.cmd("connect", "--config", e.cfg)
	cmd.Stdin = strings.NewReader("")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "the kiln daemon exited before serving") ||
		!strings.Contains(stderr.String(), "built without SEMANTIC=1") {
		t.Errorf("kiln connect with a daemon that cannot start: %v\n%s", err, stderr.String())
	}
	if n := daemonsFor(t, e.cfg); n != 0 {
		t.Errorf("%d daemons left running", n)
	}
}

// TestDaemonStop: kiln connect --stop returns once the daemon has exited,
// and a client still connected sees its server gone.
func TestDaemonStop(t *testing.T) {
	e := newDaemonEnv(t)
	s := e.client()
	callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "a"}))
	pid, _ := e.status()
	out, err := e.cmd("connect", "--config", e.cfg, "--stop").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("stopped kiln daemon pid %d", pid)) {
		t.Fatalf("kiln connect --stop: %v\n%s", err, out)
	}
	// Gone, or a zombie its parent (the first kiln connect) has yet to reap.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) == 0 || f[0] != "Z" {
			t.Errorf("daemon %d still runs after --stop returned: %s", pid, stat)
		}
	}
	if n := daemonsFor(t, e.cfg); n != 0 {
		t.Errorf("%d daemons run after --stop", n)
	}
	if _, err := s.Call(t.Context(), "list_tools_meta", map[string]any{}); err == nil {
		t.Error("a call through the stopped daemon's relay succeeded")
	}
}
