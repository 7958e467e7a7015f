package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// rooter is an in-band client session whose roots are named as it says.
type rooter struct {
	asker
	mu    sync.Mutex
	roots string
	asked chan string // each answer's roots
}

func (r *rooter) ClientRequest(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != "roots/list" {
		return nil, fmt.Errorf("unexpected %s", method)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked <- r.roots
	return json.RawMessage(`{"roots":[{"uri":"file:///` + r.roots + `","name":"` + r.roots + `"}]}`), nil
}

// A backend session kiln opened for one client session belongs to that
// session alone: the client's notifications/roots/list_changed reaches
// it, and what it asks outside any call (roots/list then, as
// server-filesystem does) goes to that client.
func TestOwnSessionFollowsItsOwnersRoots(t *testing.T) {
	d := supervised(t, "roots", func(c *config.Config) { c.Backends[0].Timeout = 5 * time.Second })
	inFlight(t, d, "sup", &session{id: "ada"}) // bob needs a session of his own
	bob := &rooter{asker: asker{session{id: "bob"}}, roots: "first", asked: make(chan string, 4)}
	roots := func(n int) string {
		t.Helper()
		res, err := d.CallTool(WithObserver(t.Context(), &Observer{Client: bob}), "sup", "roots", json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)))
		if err != nil {
			t.Fatalf("roots answer %d: %v", n, err)
		}
		return res.TextContent()
	}
	if got := roots(1); got != "roots: first" {
		t.Fatalf("bob's backend session got %q when it started, want bob's roots", got)
	}
	bob.mu.Lock()
	bob.roots = "second"
	bob.mu.Unlock()
	d.RootsChanged(t.Context(), "bob")
	// Asked again while none of bob's calls is in flight: only the
	// session's owner can answer.
	<-bob.asked
	select {
	case <-bob.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("bob's backend session asked for roots after they changed, and bob was never asked")
	}
	if got := roots(2); got != "roots: second" {
		t.Errorf("after bob's roots changed his backend session got %q, want his new roots", got)
	}
}
