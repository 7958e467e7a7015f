package daemon

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shortDir is a private folder with a path short enough for a socket
// (t.TempDir's can pass 100 bytes with long test names).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "kdu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func testIdentity(t *testing.T) Identity {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", shortDir(t))
	id, err := Identify("file:/x/kiln.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// echoSession stands in for the MCP server: these tests are about the
// socket, hello and lifecycle, which the e2e tests cover with real kiln.
func echoSession(_ context.Context, in io.Reader, out io.Writer) error {
	_, err := io.Copy(out, in)
	return err
}

type served struct {
	done chan error
}

func serve(t *testing.T, id Identity, idle time.Duration) *served {
	t.Helper()
	ln, err := Listen(id)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	go func() { s.done <- Serve(ctx, ln, ServeOptions{Key: id.Key, Idle: idle, Session: echoSession}) }()
	return s
}

func TestIdentifyDiffersByConfig(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", shortDir(t))
	state := t.TempDir()
	a, err := Identify("file:/a/kiln.yaml", state)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Identify("file:/b/kiln.yaml", state)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Identify("file:/a/kiln.yaml", state)
	if a.Key == b.Key || a.Socket == b.Socket {
		t.Errorf("two configs share a daemon: %+v %+v", a, b)
	}
	if a != again {
		t.Errorf("one config, two identities: %+v %+v", a, again)
	}
	st, err := os.Stat(filepath.Dir(a.Socket))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("socket folder: %v %v, want mode 0700", st.Mode().Perm(), err)
	}
}

func TestSocketDirRefusesASymlink(t *testing.T) {
	xdg := shortDir(t)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if err := os.Symlink(t.TempDir(), filepath.Join(xdg, "kiln")); err != nil {
		t.Fatal(err)
	}
	_, err := Identify("file:/a/kiln.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not a folder owned by this user") {
		t.Errorf("a symlinked socket folder: got %v, want a refusal", err)
	}
}

func TestDialAbsentAndRelay(t *testing.T) {
	id := testIdentity(t)
	if _, err := Dial(t.Context(), id, VerbConnect); !errors.Is(err, ErrAbsent) {
		t.Fatalf("dial with no daemon: %v, want ErrAbsent", err)
	}
	serve(t, id, time.Minute)
	c, err := Dial(t.Context(), id, VerbConnect)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Pid != os.Getpid() {
		t.Errorf("pid %d, want %d", c.Pid, os.Getpid())
	}
	if _, err := io.WriteString(c, "{\"jsonrpc\":\"2.0\"}\n"); err != nil {
		t.Fatal(err)
	}
	line, err := c.R.ReadString('\n')
	if err != nil || line != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Errorf("relayed %q, %v", line, err)
	}
	st, err := Dial(t.Context(), id, VerbStatus)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st.Sessions != 1 {
		t.Errorf("status reports %d sessions, want 1", st.Sessions)
	}
}

func TestAnotherKeyIsRefused(t *testing.T) {
	id := testIdentity(t)
	serve(t, id, time.Minute)
	other := id
	other.Key = "0123456789abcdef0123"
	_, err := Dial(t.Context(), other, VerbConnect)
	if err == nil || !strings.Contains(err.Error(), "another build of kiln or another config") {
		t.Errorf("dial with another key: %v, want a refusal", err)
	}
	// A client that is not kiln connect is refused too.
	c, err := net.Dial("unix", id.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "error ") {
		t.Errorf("a raw MCP message got %q, want an error line", line)
	}
}

func TestListenRefusesALiveDaemonAndReplacesAStaleSocket(t *testing.T) {
	id := testIdentity(t)
	// A stale socket: bound, then closed without removing the file, as a
	// killed daemon leaves it.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: id.Socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(t.Context(), id, VerbStatus); !errors.Is(err, ErrAbsent) {
		t.Fatalf("dial a stale socket: %v, want ErrAbsent", err)
	}
	serve(t, id, time.Minute)
	if _, err := Listen(id); err == nil || !strings.Contains(err.Error(), "already serves") {
		t.Errorf("second Listen on a live socket: %v, want a refusal", err)
	}
	if _, err := Dial(t.Context(), id, VerbStatus); err != nil {
		t.Errorf("the first daemon stopped answering: %v", err)
	}
}

func TestIdleAndStop(t *testing.T) {
	id := testIdentity(t)
	s := serve(t, id, time.Second)
	c, err := Dial(t.Context(), id, VerbConnect)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// No connection left: Serve returns after the idle period and
	// removes the socket.
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatal(err)
		}
	case <-t.Context().Done():
		t.Fatal("Serve did not return after the idle period")
	}
	if _, err := os.Stat(id.Socket); !os.IsNotExist(err) {
		t.Errorf("socket left after an idle exit: %v", err)
	}

	s = serve(t, id, time.Hour)
	stop, err := Dial(t.Context(), id, VerbStop)
	if err != nil {
		t.Fatal(err)
	}
	defer stop.Close()
	select {
	case err := <-s.done:
		s.done <- err
	case <-t.Context().Done():
		t.Fatal("Serve did not return after a stop request")
	}
}

func TestLockIsExclusive(t *testing.T) {
	id := testIdentity(t)
	unlock, err := Lock(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Lock(ctx, id); err == nil {
		t.Error("a second Lock succeeded while the first was held")
	}
	unlock()
	unlock2, err := Lock(t.Context(), id)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
}

// Unlocking deletes the lock file, and the lock stays exclusive while
// clients take it at once, each deleting the file the others wait on.
func TestLockFileIsRemovedAndStaysExclusive(t *testing.T) {
	id := testIdentity(t)
	unlock, err := Lock(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(id.Socket + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after unlock: %v; want it deleted", err)
	}
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				unlock, err := Lock(t.Context(), id)
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				if n > most.Load() {
					most.Store(n)
				}
				runtime.Gosched()
				holders.Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d clients held the start lock at once, want 1", m)
	}
	if _, err := os.Stat(id.Socket + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after every client unlocked: %v; want it deleted", err)
	}
}
