// Package redistest starts a real, throwaway redis-server (Debian's
// redis-server package) for tests: its own temporary folder, no
// persistence, stopped when the test ends.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one running redis-server.
type Server struct {
	// URL is what gateway.state_url takes.
	URL string
	// Addr is host:port, or the socket path.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	// bin and args start it again (Restart).
	bin  string
	args []string
}

// Need skips the test when redis-server is not installed, or fails it
// under CI=true, where a missing part is a broken setup and not a reason
// to pass.
func Need(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not on PATH; CI must install Debian's redis-server package (.ci/run does)")
		}
		t.Skip("redis-server is not on PATH; install it (apt-get install redis-server) to run this test")
	}
	return p
}

// Start runs redis-server on a unix socket in a fresh folder.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Need(t)
	// Socket paths are limited to 108 bytes; t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "kiln-redis-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	s := start(t, bin, dir, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700")
	s.URL, s.Addr = "unix://"+sock, sock
	return s
}

// StartTCP runs redis-server on a free loopback port.
func StartTCP(t testing.TB) *Server {
	t.Helper()
	bin := Need(t)
	dir := t.TempDir()
	// The port is found free and handed over; another process taking it
	// in between makes redis-server exit, which start reports.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := start(t, bin, dir, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.URL = "redis://" + s.Addr + "/0"
	return s
}

func start(t testing.TB, bin, dir string, args ...string) *Server {
	t.Helper()
	t.Helper()
	args = append(args, "--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "notice")
	return run(t, bin, args)
}

func run(t testing.TB, bin string, args []string) *Server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{}), bin: bin, args: args}
	ready := make(chan struct{})
	var logTail []string
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			line := sc.Text()
			if len(logTail) < 50 {
				logTail = append(logTail, line)
			}
			if !once && strings.Contains(strings.ToLower(line), "ready to accept connections") {
				once = true
				close(ready)
			}
		}
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("redis-server exited at start:\n%s", strings.Join(logTail, "\n"))
	case <-ctx.Done():
		t.Fatal("redis-server did not say it was ready within 10s")
	}
	return s
}

// Stop kills the server and waits for it to exit; stopping twice is fine.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}

// String names the server for messages.
func (s *Server) String() string { return fmt.Sprintf("redis-server at %s", s.Addr) }

// Restart stops the server and starts a new one on the same address. It
// keeps no data (no persistence): the new server starts empty, as a Redis
// restarted without RDB or AOF does.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	n := run(t, s.bin, s.args)
	s.cmd, s.done = n.cmd, n.done
}

// Pause stops the server's process (SIGSTOP): connections stay open but
// nothing answers, as during a network partition or a stalled host, until
// Resume.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }
