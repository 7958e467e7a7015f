package cli

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/kilnmcp/kiln/runtime/daemon"
	"github.com/kilnmcp/kiln/runtime/rawio"
)

// Serving one stdio client lowers GOMAXPROCS, unless the user set it.
func TestOneClientProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "2")
	oneClientProcs()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("with GOMAXPROCS=2 set, GOMAXPROCS became %d", got)
	}
	os.Unsetenv("GOMAXPROCS")
	oneClientProcs()
	if got := runtime.GOMAXPROCS(0); got != stdioProcs {
		t.Errorf("GOMAXPROCS = %d, want %d", got, stdioProcs)
	}
}

// Buffers (a test's, or anything not a file) pass through; pipes get raw
// ends, which release closes without closing the originals.
func TestRawStdio(t *testing.T) {
	var in strings.Reader
	var out bytes.Buffer
	if r, w, release := rawStdio(&in, &out); r != &in || w != &out {
		t.Errorf("rawStdio(buffers) = %T, %T; want them unchanged", r, w)
	} else {
		release()
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	r, w, release := rawStdio(pr, pw)
	if _, ok := r.(*rawio.File); !ok {
		t.Errorf("stdin on a pipe read through %T, want *rawio.File", r)
	}
	if _, ok := w.(*rawio.File); !ok {
		t.Errorf("stdout on a pipe written through %T, want *rawio.File", w)
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := pw.Write([]byte("y")); err != nil {
		t.Fatalf("the original stdout after release: %v", err)
	}
	buf := make([]byte, 2)
	if n, err := pr.Read(buf); err != nil || string(buf[:n]) != "xy" {
		t.Fatalf("the original stdin after release read %q, %v; want \"xy\"", buf[:n], err)
	}
}

// A client that closes kiln connect's stdout while the daemon answers is
// told apart from the daemon ending the session: the relay ends, saying
// the client stopped reading, not that the daemon stopped or crashed.
func TestRelayEndsWhenTheClientStopsReading(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine := os.NewFile(uintptr(fds[0]), "relay")
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		t.Fatal(err)
	}
	daemonEnd := os.NewFile(uintptr(fds[1]), "daemon")
	defer daemonEnd.Close()
	uc := fc.(*net.UnixConn)
	defer uc.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR.Close()
	out, err := rawio.New(outW)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := daemonEnd.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := relay(&daemon.Conn{UnixConn: uc, R: bufio.NewReader(uc)}, daemon.Identity{}, inR, out, &stderr)
	if code != exitFail || !strings.Contains(stderr.String(), "the client stopped reading") {
		t.Fatalf("relay = %d, stderr %q; want %d and the client named", code, stderr.String(), exitFail)
	}
}
