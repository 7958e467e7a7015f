package httpauth

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// startReal serves h behind g on a real loopback listener, capped by
// g.Listener, so deadlines and connection handling are net/http's own.
func startReal(t *testing.T, g *Guard, h http.Handler) (addr string, ln *capListener) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g.Wrap(h))
	srv.Listener.Close()
	srv.Listener = g.Listener(raw)
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return raw.Addr().String(), srv.Listener.(*capListener)
}

// dialFrom connects to addr from local IP src (any 127/8 address works on
// loopback), so tests can be several clients.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer reads one response from c and then expects the connection to
// close; the deadline only bounds a broken test.
func answer(t *testing.T, c net.Conn, wantClose bool) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	if wantClose {
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("connection still open after %d (read err %v)", resp.StatusCode, err)
		}
	}
	return resp
}

const stalled = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n%s\r\n{"

// TestStalledBodies checks a body that never arrives holds nothing: a
// peer without a valid token is answered 401 and cut off at once without
// a byte of the body being read, and an authenticated peer gets 408 once
// read_timeout passes. Nor does a connection stay open after the answers
// that need no token.
func TestStalledBodies(t *testing.T) {
	g := newGuard(t, config.HTTP{AuthToken: goodTok, ReadTimeout: 300 * time.Millisecond}, Options{})
	mcp := newFakeMCP()
	addr, _ := startReal(t, g, mcp)
	for _, tc := range []struct {
		name, hdr string
		want      int
	}{
		{"no token", "", 401},
		{"wrong token", "Authorization: Bearer nope\r\n", 401},
		{"malformed header", "Authorization: Basic Zm9vOmJhcg==\r\n", 401},
		{"rebinding host", "Host: evil.example\r\n", 421},
		{"foreign origin", "Origin: https://evil.example\r\n", 403},
		{"valid token", "Authorization: Bearer " + goodTok + "\r\n", 408},
		{"metadata document", "GET", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFrom(t, "127.0.0.1", addr)
			msg := strings.Replace(stalled, "%s", tc.hdr, 1)
			if tc.hdr == "GET" {
				msg = "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
			}
			if strings.HasPrefix(tc.hdr, "Host:") {
				msg = strings.Replace(msg, "Host: 127.0.0.1\r\n", "", 1)
			}
			if _, err := io.WriteString(c, msg); err != nil {
				t.Fatal(err)
			}
			resp := answer(t, c, true)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 408 {
				b, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(b), "gateway.http.read_timeout") {
					t.Errorf("408 body %q", b)
				}
			}
		})
	}
	if n := mcp.calls.Load(); n != 0 {
		t.Errorf("the handler saw %d stalled requests", n)
	}
}

// TestLongRequestsOutliveReadTimeout checks the body deadline is lifted
// once the body is in: a call and a stream that last past read_timeout
// still finish.
func TestLongRequestsOutliveReadTimeout(t *testing.T) {
	const rt = 100 * time.Millisecond
	g := newGuard(t, config.HTTP{ReadTimeout: rt}, Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-time.After(4 * rt): // the condition under test: the deadline has passed
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "done")
	})
	addr, _ := startReal(t, g, h)
	for _, method := range []string{"POST", "GET"} {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("{}")
		}
		r, _ := http.NewRequestWithContext(t.Context(), method, "http://"+addr+"/other", body)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "done" {
			t.Errorf("%s: got %d %q, want done", method, resp.StatusCode, b)
		}
	}
}

// TestConnectionCaps checks connections over the per-client and total caps
// get a 503 and are closed without being read, and slots come back when
// connections close.
func TestConnectionCaps(t *testing.T) {
	g := newGuard(t, config.HTTP{MaxConnections: 4, MaxConnectionsPerClient: 2}, Options{})
	addr, ln := startReal(t, g, newFakeMCP())
	waitCounts := func(ip string, total, fromIP int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			gt, gi := ln.counts(ip)
			if gt == total && gi == fromIP {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("connections: total %d from %s %d, want %d and %d", gt, ip, gi, total, fromIP)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	refused := func(src string) {
		t.Helper()
		resp := answer(t, dialFrom(t, src, addr), true)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 503 || !strings.Contains(string(b), "gateway.http.max_connections") {
			t.Fatalf("over the cap from %s: %d %q", src, resp.StatusCode, b)
		}
	}
	a1 := dialFrom(t, "127.0.0.1", addr)
	dialFrom(t, "127.0.0.1", addr)
	waitCounts("127.0.0.1", 2, 2)
	refused("127.0.0.1")
	dialFrom(t, "127.0.0.2", addr)
	dialFrom(t, "127.0.0.2", addr)
	waitCounts("127.0.0.2", 4, 2)
	refused("127.0.0.3") // the total
	a1.Close()
	waitCounts("127.0.0.1", 3, 1)
	c := dialFrom(t, "127.0.0.3", addr)
	if _, err := io.WriteString(c, "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp := answer(t, c, false); resp.StatusCode != 200 {
		t.Fatalf("a freed slot: status %d", resp.StatusCode)
	}
}
