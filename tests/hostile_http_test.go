//go:build e2e

package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
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
	"sync/atomic"
	"testing"
	"time"
)

// The hostile HTTP suite attacks `kiln serve --http` the way a peer on the
// network or another local process could, with raw sockets, and checks
// what it costs kiln: connections closed, descriptors back to where they
// were, other clients still served.
//
// KILN_HOSTILE_BASELINE=1 runs the same attacks against a kiln that
// predates the gateway.http keys these tests set (read_timeout,
// session_idle, the connection and session caps): the keys are left out
// and every outcome is logged as "hostile: <case>: <outcome>", which is
// how the before/after table in the change description was made. The
// tests fail there, as they should.

// hostileToken is the bearer token of every hostile kiln.
var hostileToken = rand.Text()

var baseline = os.Getenv("KILN_HOSTILE_BASELINE") != ""

// kilnProc is one kiln serve --http under attack.
type kilnProc struct {
	addr string // host:port
	pid  int

	mu   sync.Mutex
	log  []string
	wake chan struct{} // closed and replaced on each log line
}

// startKiln runs kiln with the token, debug logging and the given
// gateway.http lines (left out in baseline mode).
func startKiln(t *testing.T, httpKeys ...string) *kilnProc {
	t.Helper()
	t.Setenv("KILN_HOSTILE_TOKEN", hostileToken)
	gw := "  log_level: debug\n  http:\n    auth_token: ${KILN_HOSTILE_TOKEN}"
	for _, k := range httpKeys {
		if baseline && !strings.HasPrefix(k, "max_sessions:") {
			continue // a key older kilns refuse
		}
		gw += "\n    " + k
	}
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: gw})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kilnBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0")
	cmd.Dir = repoRoot(t)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	k := &kilnProc{pid: cmd.Process.Pid, wake: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			k.mu.Lock()
			k.log = append(k.log, sc.Text())
			close(k.wake)
			k.wake = make(chan struct{})
			k.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	line := k.waitLog(t, "serving MCP at", 30*time.Second)
	if line == "" {
		t.Fatalf("kiln did not report its address within 30s; log:\n%s", strings.Join(k.lines(), "\n"))
	}
	m := listenRE.FindStringSubmatch(line)
	k.addr = strings.TrimPrefix(m[1], "http://")
	return k
}

func (k *kilnProc) lines() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.log...)
}

// waitLog waits for a log line containing every part and returns it, or
// "" when none came within d.
func (k *kilnProc) waitLog(t *testing.T, part string, d time.Duration, more ...string) string {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	seen := 0
	for {
		k.mu.Lock()
		lines, wake := k.log[seen:], k.wake
		seen = len(k.log)
		k.mu.Unlock()
	next:
		for _, l := range lines {
			if !strings.Contains(l, part) {
				continue
			}
			for _, m := range more {
				if !strings.Contains(l, m) {
					continue next
				}
			}
			return l
		}
		select {
		case <-wake:
		case <-deadline.C:
			return ""
		}
	}
}

// fds counts kiln's open descriptors.
func (k *kilnProc) fds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(k.pid), "fd"))
	if err != nil {
		t.Fatalf("kiln's descriptors: %v", err)
	}
	return len(ents)
}

// settle waits until kiln's descriptor count holds still (backends have
// started, startup files are closed) and returns it.
func (k *kilnProc) settle(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, same := -1, 0
	for time.Now().Before(deadline) {
		n := k.fds(t)
		if n == last {
			if same++; same == 5 {
				return n
			}
		} else {
			last, same = n, 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// backTo waits until kiln holds at most want descriptors and returns the
// last count.
func (k *kilnProc) backTo(t *testing.T, want int, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n := k.fds(t)
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawConn is one client socket.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

// dial connects to kiln from local address src (any 127/8 address is
// this machine, so each is a different client IP).
func (k *kilnProc) dial(t *testing.T, src string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", k.addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// send writes a request head (and body) built from hdr lines.
func (c *rawConn) send(t *testing.T, method, path, body string, hdr ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for _, h := range hdr {
		b.WriteString(h + "\r\n")
	}
	if body != "" && !hasHeader(hdr, "Content-Length") && !hasHeader(hdr, "Transfer-Encoding") {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func hasHeader(hdr []string, name string) bool {
	for _, h := range hdr {
		if strings.HasPrefix(strings.ToLower(h), strings.ToLower(name)+":") {
			return true
		}
	}
	return false
}

// response reads one response head within d; the body is read when it
// is not a stream.
func (c *rawConn) response(d time.Duration) (*http.Response, string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, "", err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, "", nil
	}
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// closedWithin reports whether the server closed c within d, reading and
// dropping whatever it sent first.
func (c *rawConn) closedWithin(d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c.br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

var authHdr = func() string { return "Authorization: Bearer " + hostileToken }

const jsonHdr = "Content-Type: application/json"
const acceptHdr = "Accept: application/json, text/event-stream"

// initialize opens a session from src over a fresh connection and returns
// its id, or "" with the status when refused.
func (k *kilnProc) initialize(t *testing.T, src string) (sid string, status int) {
	t.Helper()
	c := k.dial(t, src)
	defer c.Close()
	c.send(t, "POST", "/mcp", request("1", "initialize", initializeParams), authHdr(), jsonHdr, acceptHdr, "Connection: close")
	resp, _, err := c.response(30 * time.Second)
	if err != nil {
		t.Fatalf("initialize from %s: %v", src, err)
	}
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode
}

// onSession sends a request naming sid from src and returns the status and
// body.
func (k *kilnProc) onSession(t *testing.T, src, method, sid, body string) (int, string) {
	t.Helper()
	c := k.dial(t, src)
	defer c.Close()
	c.send(t, method, "/mcp", body, authHdr(), jsonHdr, acceptHdr, "Mcp-Session-Id: "+sid, "Mcp-Protocol-Version: 2025-06-18", "Connection: close")
	resp, b, err := c.response(30 * time.Second)
	if err != nil {
		t.Fatalf("%s on session %.40s: %v", method, sid, err)
	}
	return resp.StatusCode, b
}

func report(t *testing.T, name, format string, args ...any) {
	t.Helper()
	t.Logf("hostile: %s: %s", name, fmt.Sprintf(format, args...))
}

// attack opens n connections from each of srcs, runs write on each, and
// reports how many kiln closed within wait and what they were answered.
func (k *kilnProc) attack(t *testing.T, n int, srcs []string, wait time.Duration, write func(c *rawConn)) (closed, peak int, statuses map[int]int) {
	t.Helper()
	var conns []*rawConn
	for _, src := range srcs {
		for range n {
			c := k.dial(t, src)
			write(c)
			conns = append(conns, c)
		}
	}
	peak = k.fds(t)
	var mu sync.Mutex
	statuses = map[int]int{}
	var nclosed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(wait)
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(deadline)
			status := 0
			if resp, err := http.ReadResponse(c.br, nil); err == nil {
				status = resp.StatusCode
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
			if c.closedWithin(time.Until(deadline)) {
				nclosed.Add(1)
			}
		})
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return int(nclosed.Load()), peak, statuses
}

// TestHostileStalledBodies: bodies that never arrive, with and without a
// token, and headers that never end, must not hold connections or
// descriptors past read_timeout.
func TestHostileStalledBodies(t *testing.T) {
	k := startKiln(t, "read_timeout: 2s")
	base := k.settle(t)
	// 500 connections as five clients of 100, each under the default
	// per-client cap, so every one reaches the guard.
	srcs := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	const n = 100
	const total = 500
	wait := 15 * time.Second // well past read_timeout and the 10s header bound of older kilns
	cases := []struct {
		name  string
		write func(t *testing.T, c *rawConn)
		want  int // the status kiln answers before closing; 0: none
	}{
		{"no token, Content-Length 200000, 1 byte sent", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "{", jsonHdr, "Content-Length: 200000")
		}, 401},
		{"wrong token, Content-Length 200000, 1 byte sent", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "{", jsonHdr, "Content-Length: 200000", "Authorization: Bearer wrong")
		}, 401},
		{"no token, chunked body that stops", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "400\r\n{\"jsonrpc\"", jsonHdr, "Transfer-Encoding: chunked")
		}, 401},
		{"no token, Expect 100-continue, no body", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "", jsonHdr, "Content-Length: 100000", "Expect: 100-continue")
		}, 401},
		{"no token, stalled body on /message", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/message?sessionId=x", "{", jsonHdr, "Content-Length: 200000")
		}, 401},
		{"no token, metadata document, then the connection left idle", func(t *testing.T, c *rawConn) {
			c.send(t, "GET", "/.well-known/oauth-protected-resource", "")
		}, 200},
		{"no token, CORS preflight, then the connection left idle", func(t *testing.T, c *rawConn) {
			c.send(t, "OPTIONS", "/mcp", "", "Origin: http://localhost:3000", "Access-Control-Request-Method: POST")
		}, 204},
		{"headers never finished", func(t *testing.T, c *rawConn) {
			_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
		}, 0},
		{"valid token, Content-Length 200000, 1 byte sent", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "{", jsonHdr, "Content-Length: 200000", authHdr())
		}, 408},
		{"valid token, chunked body that stops", func(t *testing.T, c *rawConn) {
			c.send(t, "POST", "/mcp", "400\r\n{\"jsonrpc\"", jsonHdr, "Transfer-Encoding: chunked", authHdr())
		}, 408},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			closed, peak, statuses := k.attack(t, n, srcs, wait, func(c *rawConn) { tc.write(t, c) })
			after := k.backTo(t, base, 20*time.Second)
			report(t, tc.name, "%d/%d connections closed by kiln within %s, answers %v; descriptors %d before, %d once sent, %d after", closed, total, wait, statuses, base, peak, after)
			if closed != total {
				t.Errorf("%d of %d stalled connections still open after %s", total-closed, total, wait)
			}
			if statuses[tc.want] != total {
				t.Errorf("answers %v, want %d × %d", statuses, total, tc.want)
			}
			if after > base {
				t.Errorf("kiln holds %d descriptors, %d before the attack", after, base)
			}
		})
	}
	// Kiln still serves.
	if sid, status := k.initialize(t, "127.0.0.1"); status != 200 || sid == "" {
		t.Errorf("initialize after the attacks: %d", status)
	}
}

// TestHostileConnectionFlood: connections beyond max_connections_per_client
// and max_connections are refused at once, without being read, while
// other clients are served.
func TestHostileConnectionFlood(t *testing.T) {
	k := startKiln(t, "max_connections: 40", "max_connections_per_client: 10", "read_timeout: 5s")
	base := k.settle(t)
	// Ten long-lived authenticated streams fill 127.0.0.1's share.
	var held []*rawConn
	for range 10 {
		c := k.dial(t, "127.0.0.1")
		c.send(t, "GET", "/sse", "", authHdr(), "Accept: text/event-stream")
		resp, _, err := c.response(30 * time.Second)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("open an SSE stream: %v %v", resp, err)
		}
		held = append(held, c)
	}
	tryFrom := func(src string) (int, bool) {
		c := k.dial(t, src)
		resp, _, err := c.response(5 * time.Second)
		if err != nil {
			return 0, false
		}
		return resp.StatusCode, c.closedWithin(5 * time.Second)
	}
	const n = 200
	closed, _, statuses := k.attack(t, n, []string{"127.0.0.1"}, 5*time.Second, func(*rawConn) {})
	report(t, "flood of 200 silent connections from a client holding 10 streams", "%d closed within 5s, answers %v", closed, statuses)
	if statuses[503] != n || closed != n {
		t.Errorf("flood past max_connections_per_client: answers %v, %d closed; want %d × 503, all closed", statuses, closed, n)
	}
	// Another client is served meanwhile.
	if sid, status := k.initialize(t, "127.0.0.2"); status != 200 || sid == "" {
		t.Errorf("another client during the flood: initialize %d", status)
	} else {
		report(t, "another client during the flood", "initialize %d", status)
	}
	// Three more clients fill the total of 40; a fifth client is refused.
	for _, src := range []string{"127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		for range 10 {
			c := k.dial(t, src)
			c.send(t, "GET", "/sse", "", authHdr(), "Accept: text/event-stream")
			if resp, _, err := c.response(30 * time.Second); err != nil || resp.StatusCode != 200 {
				t.Fatalf("stream from %s: %v %v", src, resp, err)
			}
			held = append(held, c)
		}
	}
	status, closedAt := tryFrom("127.0.0.6")
	report(t, "a new client once 40 connections are open", "answer %d, closed %v", status, closedAt)
	if status != 503 || !closedAt {
		t.Errorf("past max_connections: answer %d, closed %v; want 503 and closed", status, closedAt)
	}
	for _, c := range held {
		c.Close()
	}
	after := k.backTo(t, base, 20*time.Second)
	report(t, "after the streams close", "descriptors %d before, %d after", base, after)
	if after > base {
		t.Errorf("kiln holds %d descriptors, %d before", after, base)
	}
	if sid, status := k.initialize(t, "127.0.0.6"); status != 200 || sid == "" {
		t.Errorf("initialize once the streams closed: %d", status)
	}
}

// TestHostileForgedSessions: session ids kiln never issued get 404 on
// every method and open nothing, ids cannot move between clients, and the
// stateless 2026-07-28 revision, which has no sessions, still works.
func TestHostileForgedSessions(t *testing.T) {
	k := startKiln(t)
	base := k.settle(t)
	legit, status := k.initialize(t, "127.0.0.1")
	if status != 200 || legit == "" {
		t.Fatalf("initialize: %d", status)
	}
	deleted, _ := k.initialize(t, "127.0.0.1")
	if st, _ := k.onSession(t, "127.0.0.1", "DELETE", deleted, ""); st != 200 {
		t.Fatalf("DELETE: %d", st)
	}
	call := request("7", "tools/call", `{"name":"search_tools","arguments":{"task_description":"echo"}}`)
	for _, tc := range []struct{ name, src, method, sid string }{
		{"tools/call with a made-up uuid id", "127.0.0.1", "POST", "mcp-session-8c4bd6a0-7a4e-4c35-9d2f-0d6f0f6b7a11"},
		{"tools/call with a short id", "127.0.0.1", "POST", "1"},
		{"tools/call with a 4000-byte id", "127.0.0.1", "POST", strings.Repeat("a", 4000)},
		{"tools/call with another client's id", "127.0.0.2", "POST", legit},
		{"tools/call with a deleted id", "127.0.0.1", "POST", deleted},
		{"DELETE of a made-up id", "127.0.0.1", "DELETE", "mcp-session-made-up"},
		{"DELETE of another client's id", "127.0.0.2", "DELETE", legit},
	} {
		body := ""
		if tc.method == "POST" {
			body = call
		}
		st, b := k.onSession(t, tc.src, tc.method, tc.sid, body)
		report(t, tc.name, "%d %.220s", st, strings.TrimSpace(b))
		if st != 404 || !strings.Contains(b, "initialize") {
			t.Errorf("%s: %d %q, want 404 telling the client to initialize", tc.name, st, b)
		}
	}
	// GET streams with forged ids: none may open.
	const n = 200
	var opened atomic.Int64
	statuses := map[int]int{}
	var conns []*rawConn
	for i := range n {
		c := k.dial(t, []string{"127.0.0.1", "127.0.0.2"}[i%2]) // under the per-client connection cap
		c.send(t, "GET", "/mcp", "", authHdr(), "Accept: text/event-stream", "Mcp-Protocol-Version: 2025-06-18",
			fmt.Sprintf("Mcp-Session-Id: forged-%d", i))
		conns = append(conns, c)
	}
	for _, c := range conns {
		resp, _, err := c.response(10 * time.Second)
		st := 0
		if err == nil {
			st = resp.StatusCode
		}
		statuses[st]++
		if st == 200 {
			opened.Add(1)
		}
	}
	peak := k.fds(t)
	for _, c := range conns {
		c.Close()
	}
	after := k.backTo(t, base, 20*time.Second)
	report(t, "200 GET streams with forged ids", "answers %v (%d streams opened); descriptors %d before, %d with the sockets open, %d after", statuses, opened.Load(), base, peak, after)
	if statuses[404] != n {
		t.Errorf("forged GET streams: answers %v, want %d × 404", statuses, n)
	}
	if after > base {
		t.Errorf("kiln holds %d descriptors, %d before", after, base)
	}
	// GET streams on one real session: each replaces the one before, so a
	// session never holds more than one.
	type stream struct {
		c    *rawConn
		body io.ReadCloser
	}
	var streams []stream
	for range 50 {
		c := k.dial(t, "127.0.0.1")
		c.send(t, "GET", "/mcp", "", authHdr(), "Accept: text/event-stream", "Mcp-Protocol-Version: 2025-06-18", "Mcp-Session-Id: "+legit)
		resp, _, err := c.response(30 * time.Second)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET stream on the real session: %v %v", resp, err)
		}
		streams = append(streams, stream{c, resp.Body})
	}
	// ended reports whether kiln ended the stream (or its connection)
	// within d.
	ended := func(s stream, d time.Duration) bool {
		_ = s.c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, s.body)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	replaced := 0
	for _, s := range streams[:len(streams)-1] {
		if ended(s, 10*time.Second) {
			replaced++
		}
	}
	lastOpen := !ended(streams[len(streams)-1], 200*time.Millisecond)
	report(t, "50 GET streams on one real session", "%d of the first 49 ended by kiln within 10s, the newest open: %v", replaced, lastOpen)
	if replaced != 49 || !lastOpen {
		t.Errorf("GET streams on one session: %d/49 replaced, newest open %v", replaced, lastOpen)
	}
	for _, s := range streams {
		s.c.Close()
	}
	// The legitimate session is untouched.
	if st, b := k.onSession(t, "127.0.0.1", "POST", legit, call); st != 200 || !strings.Contains(b, "everything.echo") {
		t.Errorf("the real session after the attack: %d %.200s", st, b)
	}
	// 2026-07-28 has no sessions: a stray header changes nothing.
	c := k.dial(t, "127.0.0.1")
	c.send(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		authHdr(), jsonHdr, acceptHdr, "Mcp-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", "Mcp-Session-Id: anything")
	if resp, b, err := c.response(30 * time.Second); err != nil || resp.StatusCode != 200 || !strings.Contains(b, "search_tools") {
		t.Errorf("stateless tools/list with a stray session header: %v %v %.200s", resp, err, b)
	}
}

// TestHostileSessionHog: one client opening sessions without end, or
// holding every session it may have busy, cannot keep another client
// from initializing and calling.
func TestHostileSessionHog(t *testing.T) {
	k := startKiln(t, "max_sessions: 4", "max_sessions_total: 12")
	k.settle(t)
	// Idle hog on the victim's own address (one local process against
	// another, no per-process identity): 60 initializes never refused,
	// and the victim still gets in.
	refused := 0
	var first string
	for i := range 60 {
		sid, st := k.initialize(t, "127.0.0.1")
		if st != 200 {
			refused++
		}
		if i == 0 {
			first = sid
		}
	}
	report(t, "one local process opens 60 sessions and leaves them idle", "%d of 60 refused", refused)
	outcome, ok := tryClient(t, k, "127.0.0.1")
	report(t, "another local client after that", "%s", outcome)
	if !ok {
		t.Errorf("a local client after the idle hog: %s", outcome)
	}
	// The hog's oldest sessions made room: they are gone, not just uncounted.
	if st, _ := k.onSession(t, "127.0.0.1", "POST", first, request("4", "tools/list", "")); st != 404 {
		t.Errorf("the hog's first session after 60 more: %d, want 404", st)
	}

	// Busy hog on another address: every session it may hold has a GET
	// stream open, and /sse streams on top.
	const hog = "127.0.0.3"
	var streams []*rawConn
	for range 4 {
		sid, st := k.initialize(t, hog)
		if st != 200 {
			break
		}
		c := k.dial(t, hog)
		c.send(t, "GET", "/mcp", "", authHdr(), "Accept: text/event-stream", "Mcp-Protocol-Version: 2025-06-18", "Mcp-Session-Id: "+sid)
		if resp, _, err := c.response(30 * time.Second); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		streams = append(streams, c)
	}
	sseRefused := 0
	for range 10 {
		c := k.dial(t, hog)
		c.send(t, "GET", "/sse", "", authHdr(), "Accept: text/event-stream")
		resp, _, err := c.response(30 * time.Second)
		if err != nil || resp.StatusCode != 200 {
			sseRefused++
			continue
		}
		streams = append(streams, c)
	}
	_, st := k.initialize(t, hog)
	report(t, "a client with 4 busy sessions opens 10 /sse streams and initializes again", "%d of 10 streams refused, initialize %d", sseRefused, st)
	if sseRefused != 10 || st != 429 {
		t.Errorf("a client at its cap with busy sessions: %d/10 streams refused, initialize %d; want all refused and 429", sseRefused, st)
	}
	outcome, ok = tryClient(t, k, "127.0.0.4")
	report(t, "another client while the hog holds its streams", "%s", outcome)
	if !ok {
		t.Errorf("another client during the busy hog: %s", outcome)
	}
	for _, c := range streams {
		c.Close()
	}
}

// tryClient opens a session from src and calls search_tools on it, the
// way any stateful (pre-2026-07-28) client does, and says what happened.
func tryClient(t *testing.T, k *kilnProc, src string) (string, bool) {
	t.Helper()
	sid, st := k.initialize(t, src)
	if st != 200 {
		return fmt.Sprintf("initialize refused with %d", st), false
	}
	st, b := k.onSession(t, src, "POST", sid, request("3", "tools/call", `{"name":"search_tools","arguments":{"task_description":"add two numbers"}}`))
	ok := st == 200 && strings.Contains(b, "everything.get-sum")
	return fmt.Sprintf("initialize 200, search_tools on the session %d (found get-sum: %v)", st, ok), ok
}

// TestHostileIdleSessions: a session nobody uses is closed after
// session_idle and forgotten by the server, a session with a stream open
// is kept, and a later request on a closed one gets 404.
func TestHostileIdleSessions(t *testing.T) {
	k := startKiln(t, "session_idle: 2s")
	k.settle(t)
	var idle []string
	for range 5 {
		sid, st := k.initialize(t, "127.0.0.1")
		if st != 200 {
			t.Fatalf("initialize: %d", st)
		}
		idle = append(idle, sid)
	}
	kept, _ := k.initialize(t, "127.0.0.1")
	stream := k.dial(t, "127.0.0.1")
	stream.send(t, "GET", "/mcp", "", authHdr(), "Accept: text/event-stream", "Mcp-Protocol-Version: 2025-06-18", "Mcp-Session-Id: "+kept)
	if resp, _, err := stream.response(30 * time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	evicted := 0
	deadline := time.Now().Add(30 * time.Second)
	for _, sid := range idle {
		if k.waitLog(t, "http session closed", time.Until(deadline), "session="+sid, "terminated=true") != "" {
			evicted++
		}
	}
	call := request("2", "tools/list", "")
	st, b := k.onSession(t, "127.0.0.1", "POST", idle[0], call)
	report(t, "5 sessions left idle (session_idle 2s)", "%d/5 closed and terminated in the server within 30s; a request on one then: %d %.100s", evicted, st, b)
	if evicted != 5 || st != 404 || !strings.Contains(b, "session_idle") {
		t.Errorf("idle sessions: %d/5 evicted, then %d %q", evicted, st, b)
	}
	st, _ = k.onSession(t, "127.0.0.1", "POST", kept, call)
	report(t, "a session with a GET stream open over the same time", "request on it: %d", st)
	if st != 200 {
		t.Errorf("a session with an open stream was closed: %d", st)
	}
}
