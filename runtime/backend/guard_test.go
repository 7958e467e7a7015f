package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
)

func rules(t *testing.T, entries ...string) []config.HostRule {
	t.Helper()
	var out []config.HostRule
	for _, e := range entries {
		r, err := config.ParseHostRule(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// expectCheck runs one address through g and compares the outcome: "" for
// allowed, else a word the refusal's reason must contain.
func expectCheck(t *testing.T, g *Guard, host, addr string, want string) {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	err := g.check(host, ap.Addr(), ap.Port())
	switch {
	case want == "" && err != nil:
		t.Errorf("%s (%s): refused: %v", host, addr, err)
	case want != "" && err == nil:
		t.Errorf("%s (%s): allowed, want refused as %s", host, addr, want)
	case want != "" && !errors.Is(err, ErrAddressRefused):
		t.Errorf("%s (%s): %v does not wrap ErrAddressRefused", host, addr, err)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s (%s): %v, want a reason with %q", host, addr, err, want)
	}
}

func TestGuardRefusesInternalAddresses(t *testing.T) {
	g := &Guard{}
	tests := []struct{ addr, want string }{
		{"127.0.0.1:22", "loopback"},
		{"127.1.2.3:80", "loopback"},
		{"[::1]:80", "loopback"},
		{"[::ffff:127.0.0.1]:80", "loopback"},
		{"10.1.2.3:80", "private"},
		{"172.16.0.1:80", "private"},
		{"172.31.255.255:80", "private"},
		{"192.168.1.1:80", "private"},
		{"[fd00::1]:80", "private"},
		{"[fc00::1]:80", "private"},
		{"[::ffff:10.0.0.1]:80", "private"},
		{"169.254.169.254:80", "link-local"},
		{"[::ffff:169.254.169.254]:80", "link-local"},
		{"[fe80::1]:80", "link-local"},
		{"[fe80::1%eth0]:80", "link-local"},
		{"224.0.0.1:80", "multicast"},
		{"239.255.255.250:1900", "multicast"},
		{"[ff02::1]:80", "multicast"},
		{"255.255.255.255:80", "broadcast"},
		{"0.0.0.0:80", "unspecified"},
		{"0.1.2.3:80", "unspecified"},
		{"[::]:80", "unspecified"},
		{"100.64.0.1:80", "carrier-grade NAT"},
		{"100.127.255.255:80", "carrier-grade NAT"},
		{"[fec0::1]:80", "site-local"},
		{"[::7f00:1]:80", "loopback address inside an IPv6"},             // IPv4-compatible 127.0.0.1
		{"[64:ff9b::a9fe:a9fe]:80", "link-local address inside an IPv6"}, // NAT64 169.254.169.254
		{"[2002:7f00:1::1]:80", "loopback address inside an IPv6"},       // 6to4 127.0.0.1
		{"100.128.0.1:80", ""},
		{"172.32.0.1:80", ""},
		{"8.8.8.8:443", ""},
		{"[2606:4700::1111]:443", ""},
		{"[64:ff9b::808:808]:443", ""}, // NAT64 8.8.8.8
	}
	for _, tc := range tests {
		host := netip.MustParseAddrPort(tc.addr).Addr().String()
		expectCheck(t, g, host, tc.addr, tc.want)
	}
}

func TestGuardResolvesNames(t *testing.T) {
	g := &Guard{}
	_, err := g.allowed(t.Context(), "localhost", 80)
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "loopback") || refused.Host != "localhost" {
		t.Errorf("localhost: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "localhost (") {
		t.Errorf("the refusal does not name the host and its address: %v", err)
	}
}

func TestGuardAllowRulesAndSelf(t *testing.T) {
	self := netip.MustParseAddrPort("127.0.0.1:8080")
	g := &Guard{Allow: rules(t, "127.0.0.0/8", "10.0.0.5:3000", "mcp.internal", "[::1]:9000"), Self: []netip.AddrPort{self}}
	expectCheck(t, g, "127.0.0.1", "127.0.0.1:3000", "")
	expectCheck(t, g, "127.9.9.9", "127.9.9.9:8080", "")
	expectCheck(t, g, "10.0.0.5", "10.0.0.5:3000", "")
	expectCheck(t, g, "10.0.0.5", "10.0.0.5:3001", "private")
	expectCheck(t, g, "10.0.0.6", "10.0.0.6:3000", "private")
	expectCheck(t, g, "mcp.internal", "192.168.7.7:80", "")
	expectCheck(t, g, "MCP.Internal.", "192.168.7.7:80", "")
	expectCheck(t, g, "other.internal", "192.168.7.7:80", "private")
	expectCheck(t, g, "::1", "[::1]:9000", "")
	expectCheck(t, g, "::1", "[::1]:9001", "loopback")
	// kiln's own listener stays refused, however it is named.
	expectCheck(t, g, "127.0.0.1", "127.0.0.1:8080", "kiln's own listener")
	expectCheck(t, g, "localhost", "127.0.0.1:8080", "kiln's own listener")
	expectCheck(t, g, "::ffff:127.0.0.1", "[::ffff:127.0.0.1]:8080", "kiln's own listener")
	expectCheck(t, g, "0.0.0.0", "0.0.0.0:8080", "kiln's own listener")
	all := &Guard{Allow: rules(t, "0.0.0.0/0", "::/0"), Self: []netip.AddrPort{self}}
	expectCheck(t, all, "127.0.0.1", "127.0.0.1:8080", "kiln's own listener")

	// A listener on every interface is reached at any local address.
	wild := &Guard{Allow: rules(t, "0.0.0.0/0", "::/0"), Self: []netip.AddrPort{netip.MustParseAddrPort("[::]:9443")}}
	expectCheck(t, wild, "127.0.0.1", "127.0.0.1:9443", "kiln's own listener")
	expectCheck(t, wild, "::1", "[::1]:9443", "kiln's own listener")
	expectCheck(t, wild, "127.0.0.1", "127.0.0.1:9444", "")
	expectCheck(t, wild, "203.0.113.9", "203.0.113.9:9443", "") // not this machine
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
			ip, _ := netip.AddrFromSlice(n.IP)
			ap := netip.AddrPortFrom(ip.Unmap(), 9443)
			expectCheck(t, wild, ap.Addr().String(), ap.String(), "kiln's own listener")
		}
	}
}

// hits counts the requests a real local server answers.
func hits(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte("target reached"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestGuardedClientChecksRedirects(t *testing.T) {
	target, reached := hits(t)
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/mcp", http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)

	g := &Guard{Allow: rules(t, hostPort(t, redirector))}
	_, err := g.Client().Get(redirector.URL)
	if !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a redirect to a loopback server not allowed: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the refused target was reached %d times", n)
	}

	// Allowed as well, the same redirect goes through.
	g.Allow = rules(t, hostPort(t, redirector), hostPort(t, target))
	resp, err := g.Client().Get(redirector.URL)
	if err != nil {
		t.Fatalf("an allowed redirect: %v", err)
	}
	resp.Body.Close()
	if n := reached.Load(); n != 1 {
		t.Errorf("the allowed target was reached %d times, want 1", n)
	}

	// kiln's own listener stays out even when its address is allowed.
	g.Self = []netip.AddrPort{netip.MustParseAddrPort(hostPort(t, target))}
	if _, err := g.Client().Get(redirector.URL); !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), "kiln's own listener") {
		t.Errorf("a redirect to kiln itself: %v", err)
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("kiln's own listener was reached through a redirect")
	}
}

// TestGuardRechecksEveryConnection simulates DNS rebinding: a name first
// resolves to an allowed address, then to a private one. Lookup is a test
// double for DNS: no resolver here can be made to change its answer, and
// the guard's resolution is the seam the attack goes through.
func TestGuardRechecksEveryConnection(t *testing.T) {
	target, reached := hits(t)
	port := netip.MustParseAddrPort(hostPort(t, target)).Port()
	var answer atomic.Value
	answer.Store([]netip.Addr{netip.MustParseAddr("127.0.0.1")})
	var lookups atomic.Int32
	g := &Guard{
		Allow: rules(t, hostPort(t, target)),
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			lookups.Add(1)
			if host != "rebind.test" {
				return nil, errors.New("unknown host " + host)
			}
			return answer.Load().([]netip.Addr), nil
		},
	}
	c := g.Client()
	url := fmt.Sprintf("http://rebind.test:%d/mcp", port)
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("first connection to an allowed address: %v", err)
	}
	resp.Body.Close()

	answer.Store([]netip.Addr{netip.MustParseAddr("169.254.169.254")})
	c.CloseIdleConnections()
	if _, err := c.Get(url); !errors.Is(err, ErrAddressRefused) || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("after rebinding to the metadata address: %v", err)
	}
	// A name with a public and an internal address is dialled only at the
	// allowed one.
	answer.Store([]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1")})
	c.CloseIdleConnections()
	resp, err = c.Get(url)
	if err != nil {
		t.Fatalf("mixed answer: %v", err)
	}
	resp.Body.Close()
	if n := reached.Load(); n != 2 {
		t.Errorf("target reached %d times, want 2", n)
	}
	if n := lookups.Load(); n != 3 {
		t.Errorf("%d lookups for 3 connections: a connection was not re-resolved", n)
	}
}

func TestDialWithGuard(t *testing.T) {
	s := testServer()
	streamable := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(streamable.Close)
	sse := httptest.NewUnstartedServer(nil)
	sse.Config.Handler = server.NewSSEServer(s, server.WithBaseURL("http://"+sse.Listener.Addr().String()))
	sse.Start()
	t.Cleanup(sse.Close)

	for _, tc := range []struct {
		srv *httptest.Server
		cfg *config.Backend
	}{
		{streamable, &config.Backend{Name: "streamable", Transport: config.TransportHTTP, URL: streamable.URL + "/mcp", Enabled: true}},
		{sse, &config.Backend{Name: "legacy", Transport: config.TransportSSE, URL: sse.URL + "/sse", Enabled: true}},
	} {
		t.Run(tc.cfg.Transport, func(t *testing.T) {
			_, err := DialTimeout(t.Context(), tc.cfg, 10*time.Second, Options{Guard: &Guard{}})
			if !errors.Is(err, ErrAddressRefused) {
				t.Fatalf("a loopback backend without allow_hosts: %v", err)
			}
			g := &Guard{Allow: rules(t, hostPort(t, tc.srv))}
			c, err := DialTimeout(t.Context(), tc.cfg, 10*time.Second, Options{Guard: g})
			if err != nil {
				t.Fatalf("allowed: %v", err)
			}
			defer c.Close()
			if r, err := c.CallTool(t.Context(), "fail", nil, CallOptions{}); err != nil || !r.IsError {
				t.Errorf("fail over a guarded connection: err=%v result=%+v", err, r)
			}
		})
	}
}

func TestStdioBackendGetsOnlyItsEnvironment(t *testing.T) {
	t.Setenv("KILN_HTTP_TOKEN", "kiln-token-value")
	t.Setenv("SECRET_X", "secret-value")
	t.Setenv("LC_TIME", "C")
	cfg := stdioConfig(t, "serve")
	c := dial(t, cfg)
	r, err := c.CallTool(t.Context(), "environ", nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, block := range r.Content {
		var tc struct{ Text string }
		_ = json.Unmarshal(block, &tc)
		names = append(names, strings.Split(tc.Text, "\n")...)
	}
	for _, want := range []string{"PATH", "HOME", "LC_TIME", "KILN_TEST_SERVER", "GITHUB_TOKEN"} {
		if !slices.Contains(names, want) {
			t.Errorf("the backend lacks %s; it has %v", want, names)
		}
	}
	for _, leaked := range []string{"KILN_HTTP_TOKEN", "SECRET_X"} {
		if slices.Contains(names, leaked) {
			t.Errorf("kiln's %s reached the backend", leaked)
		}
	}
}

func TestInheritedEnv(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "TERM=xterm", "LANG=C.UTF-8",
		"LC_ALL=C", "TZ=UTC", "TMPDIR=/t", "LD_LIBRARY_PATH=/opt/lib", "KILN_HTTP_TOKEN=t", "AWS_SECRET_ACCESS_KEY=k", "PATHX=1", "LCX=1", "=weird"}
	got := inheritedEnv(in)
	want := in[:11]
	if !slices.Equal(got, want) {
		t.Errorf("inheritedEnv = %v, want %v", got, want)
	}
}
