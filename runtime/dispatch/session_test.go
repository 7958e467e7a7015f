package dispatch

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// asker is a client session that takes requests in the middle of a call,
// as a 2025-era client declaring sampling or elicitation does.
type asker struct{ session }

func (*asker) InBand() bool { return true }

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func callAs(t *testing.T, d *Dispatcher, s ClientSession, tool string) (*toolcall.Result, error) {
	t.Helper()
	return d.CallTool(WithObserver(t.Context(), &Observer{Client: s}), "sup", tool, nil)
}

// A client session that needs a backend session of its own (another
// session's call is in flight on the shared stdio session) whose own
// session cannot start still gets its call run, on the shared session;
// the failure is logged once with the backend's reason, and the next call
// does not start the backend again.
func TestOwnSessionFailureFallsBackToShared(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "instance")
	d := supervised(t, "once", func(c *config.Config) { c.Backends[0].Env["KILN_TEST_ONCE"] = marker })
	logs := &lockedBuffer{}
	d.log = slog.New(slog.NewTextHandler(logs, nil))
	ada, bob := &asker{session{id: "ada"}}, &asker{session{id: "bob"}}
	res, err := callAs(t, d, &ada.session, "pid") // asks nothing in-band: always shared
	if err != nil {
		t.Fatal(err)
	}
	shared := res.TextContent()
	// Bob needs a session of his own whatever revision the shared one
	// negotiated: ada's call is in flight there.
	inFlight(t, d, "sup", &ada.session)
	for i := range 2 {
		res, err := callAs(t, d, bob, "pid")
		if err != nil {
			t.Fatalf("bob's call %d while ada's runs: %v; want it run on the shared session", i+1, err)
		}
		if got := res.TextContent(); got != shared {
			t.Errorf("bob's call %d ran on process %s, want the shared one's %s", i+1, got, shared)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "could not open a backend session for a client session"); n != 1 {
		t.Errorf("the failure is logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "another instance holds") {
		t.Errorf("the log does not give the backend's reason:\n%s", out)
	}
}

// A client session's own backend session still starting when the client
// session ends, or when kiln shuts down, is not left running: its process
// has exited by the time the call that started it returns.
func TestOwnSessionStillDialingIsClosed(t *testing.T) {
	for _, end := range []string{"session end", "shutdown"} {
		t.Run(end, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "kiln-gate-") // a short path for the socket
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			gate := filepath.Join(dir, "gate.sock")
			ln, err := net.Listen("unix", gate)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			d := supervised(t, "gate", func(c *config.Config) {
				c.Backends[0].Env["KILN_TEST_ONCE"] = filepath.Join(dir, "instance")
				c.Backends[0].Env["KILN_TEST_GATE"] = gate
			})
			ada, bob := &asker{session{id: "ada"}}, &asker{session{id: "bob"}}
			inFlight(t, d, "sup", &ada.session)
			returned := make(chan error, 1)
			go func() {
				_, err := callAs(t, d, bob, "pid")
				returned <- err
			}()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			if end == "shutdown" {
				d.Close()
			} else {
				d.EndSession("bob")
			}
			_, _ = c.Write([]byte{1}) // lets a process still there finish starting
			if err := <-returned; err != nil && end == "session end" {
				t.Errorf("bob's call: %v; want it run on the shared session", err)
			}
			if alive(pid) {
				t.Errorf("the process of bob's own backend session (pid %d) still runs after its call returned", pid)
			}
		})
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
