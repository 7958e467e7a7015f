package cli

import (
	"io"
	"os"
	"runtime"

	"github.com/kilnmcp/kiln/runtime/rawio"
)

// rawStdio returns the ends kiln serve reads its client from and writes
// it to: raw ones (package rawio) when stdin and stdout are the process's
// own pipes or sockets, which is how an agent runs kiln; a terminal or a
// file, or the buffers of a test, are used as they are. release closes
// the raw ends.
func rawStdio(stdin io.Reader, stdout io.Writer) (in io.Reader, out io.Writer, release func()) {
	in, out = stdin, stdout
	var opened []io.Closer
	if f, ok := stdin.(*os.File); ok {
		if r, err := rawio.Reopen(f, os.O_RDONLY); err == nil {
			in, opened = r, append(opened, r)
		}
	}
	if f, ok := stdout.(*os.File); ok {
		if w, err := rawio.Reopen(f, os.O_WRONLY); err == nil {
			out, opened = w, append(opened, w)
		}
	}
	return in, out, func() {
		for _, c := range opened {
			_ = c.Close()
		}
	}
}

// stdioProcs is GOMAXPROCS while kiln serves one client over stdio,
// unless the GOMAXPROCS variable sets it. kiln's own work on a call is
// tens of microseconds; with a second P every goroutine hand-off wakes
// another thread to spin for work (futex and nanosleep calls), which cost
// a tier-1 call more than that work (BenchmarkEchoHop, BenchmarkEchoHopAB:
// about 60 µs of the ~230 µs kiln added). Scripts run in worker processes
// of their own, which keep every core.
const stdioProcs = 1

// oneClientProcs sets GOMAXPROCS for serving one stdio client.
func oneClientProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(stdioProcs)
	}
}
