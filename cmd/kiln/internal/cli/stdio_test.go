package cli

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"

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
