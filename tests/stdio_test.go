//go:build e2e

package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kiln reads and writes its stdio nonblocking (runtime/rawio), but the
// pipes and sockets it is handed are shared: a client that keeps its copy
// of kiln's stdin, or a process beside kiln on the same stdout, reads
// and writes them in blocking mode. These tests hold such a copy and
// check it is never switched to nonblocking, with pipes (most clients)
// and with sockets (Node's child_process, so MCP Inspector and other
// Node clients), and that kiln serves through both.

// stdioEnds is one direction of kiln's stdio: the end kiln gets, a copy
// of it the test keeps (sharing its file description, as another holder
// would) and the test's own end.
type stdioEnds struct{ kilns, kept, mine *os.File }

func pipeEnds(t *testing.T, kilnReads bool) stdioEnds {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "pipe-r"), os.NewFile(uintptr(fds[1]), "pipe-w")
	e := stdioEnds{kilns: r, mine: w}
	if !kilnReads {
		e = stdioEnds{kilns: w, mine: r}
	}
	e.kept = dupFile(t, e.kilns)
	t.Cleanup(func() { r.Close(); w.Close(); e.kept.Close() })
	return e
}

func socketEnds(t *testing.T) stdioEnds {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := stdioEnds{kilns: os.NewFile(uintptr(fds[0]), "sock-kiln"), mine: os.NewFile(uintptr(fds[1]), "sock-mine")}
	e.kept = dupFile(t, e.kilns)
	t.Cleanup(func() { e.kilns.Close(); e.mine.Close(); e.kept.Close() })
	return e
}

// dupFile is a second descriptor of f's file description, not polled.
func dupFile(t *testing.T, f *os.File) *os.File {
	t.Helper()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()+"-kept")
}

func isNonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if e != 0 {
		t.Fatal(e)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// startOn starts kiln serve, on a config with no backends, with in and
// out as its stdin and stdout; the test's copies of kiln's ends are closed
// (kept stays).
func startOn(t *testing.T, in, out stdioEnds) *exec.Cmd {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "version: 1\ngateway:\n  state_dir: %s\n  log_level: warn\n", t.TempDir()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kilnBin(t), "serve", "--config", cfg)
	cmd.Dir = repoRoot(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in.kilns, out.kilns, testWriter{t, "kiln"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in.kilns.Close()
	out.kilns.Close()
	return cmd
}

// serveOver runs kiln serve on in and out, checks it answers initialize
// and tools/list, and calls during(…) while kiln still serves; then it
// closes the input and waits for kiln to exit.
func serveOver(t *testing.T, in, out stdioEnds, during func()) {
	t.Helper()
	cmd := startOn(t, in, out)
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := fmt.Fprintln(in.mine, l); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(out.mine)
	sc.Buffer(nil, 1<<22)
	listed := false
	for !listed && sc.Scan() {
		listed = strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":2,"result":{"tools":[`)
	}
	if !listed {
		t.Fatalf("no tools/list answer (scan: %v)", sc.Err())
	}
	during()
	in.mine.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kiln serve after stdin closed: %v", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("kiln serve did not exit a minute after stdin closed")
	}
}

func TestStdioLeavesSharedPipesBlocking(t *testing.T) {
	in, out := pipeEnds(t, true), pipeEnds(t, false)
	serveOver(t, in, out, func() {
		if isNonblocking(t, in.kept) || isNonblocking(t, out.kept) {
			t.Errorf("kiln switched its stdio pipes to nonblocking for every holder: stdin %v, stdout %v",
				isNonblocking(t, in.kept), isNonblocking(t, out.kept))
		}
	})
}

// A socket's descriptor cannot be opened anew: kiln's duplicate shares
// it, so it is nonblocking while kiln serves and must be blocking again
// once kiln has exited.
func TestStdioRestoresSharedSockets(t *testing.T) {
	in := socketEnds(t)
	out := stdioEnds{kilns: dupFile(t, in.kilns), kept: in.kept, mine: in.mine}
	serveOver(t, in, out, func() {})
	if isNonblocking(t, in.kept) {
		t.Error("kiln left the socket it was served on nonblocking after it exited")
	}
}

// A client that closes its end of kiln's stdout but keeps stdin open ends
// the session at kiln's next answer: before kiln wrote stdout raw, the
// broken pipe's SIGPIPE killed it; raw writes get EPIPE instead, and kiln
// must not go on serving calls nobody reads.
func TestStdioEndsWhenTheClientStopsReading(t *testing.T) {
	in, out := pipeEnds(t, true), pipeEnds(t, false)
	cmd := startOn(t, in, out)
	out.kept.Close()
	send := func(l string) {
		t.Helper()
		if _, err := fmt.Fprintln(in.mine, l); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if line, err := bufio.NewReader(out.mine).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize answer %q, %v", line, err)
	}
	out.mine.Close()
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"task_description":"echo"}}}`)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		cmd.Process.Kill()
		t.Fatal("kiln serve still running a minute after its client closed stdout")
	}
}
