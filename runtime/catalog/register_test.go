package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
)

// syncBuffer is a log sink the dispatcher's goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// liveCatalog is a catalog over a real dispatcher, with allow_hosts set
// to allow and self as kiln's own listener.
func liveCatalog(t *testing.T, self netip.AddrPort, allow ...string) (*Catalog, *syncBuffer) {
	t.Helper()
	gw := config.DefaultGateway()
	gw.ConnectTimeout = 5 * time.Second
	for _, a := range allow {
		r, err := config.ParseHostRule(a)
		if err != nil {
			t.Fatal(err)
		}
		gw.Registration.AllowHosts = append(gw.Registration.AllowHosts, r)
	}
	cfg := &config.Config{Version: 1, Dir: t.TempDir(), Gateway: gw}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	reg := registry.New()
	disp := dispatch.New(reg, cfg, dispatch.Options{Logger: log, Self: []netip.AddrPort{self}})
	disp.Start(t.Context())
	t.Cleanup(func() { disp.Close() })
	return New(Options{Registry: reg, Backends: disp, Config: cfg, Search: Lexical(search.Build(nil)), Logger: log}), logs
}

func mcpServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("probe-target", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("ping", mcp.WithDescription("Answers pong.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("pong"), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv
}

// TestFailedRegistrationsLookAlike registers HTTP backends that fail for
// different reasons (refused by policy, kiln itself, a closed port, a web
// server that is not MCP, a redirect to a refused address) and checks the
// client gets the same words for each, while kiln's log has the reason.
func TestFailedRegistrationsLookAlike(t *testing.T) {
	target := mcpServer(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>not MCP</html>"))
	}))
	t.Cleanup(web.Close)
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/mcp", http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	self := httptest.NewServer(http.NotFoundHandler()) // stands for kiln's --http listener
	t.Cleanup(self.Close)
	selfAddr := netip.MustParseAddrPort(strings.TrimPrefix(self.URL, "http://"))

	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	c, logs := liveCatalog(t, selfAddr, host(web), host(redirector), closed, host(self))
	cases := []struct{ name, def, reason string }{
		{"loopback MCP server not allowed", `{"transport":"http","url":"` + target.URL + `/mcp"}`, "loopback"},
		{"localhost", `{"transport":"http","url":"http://localhost:` + target.URL[strings.LastIndex(target.URL, ":")+1:] + `/mcp"}`, "loopback"},
		{"metadata service", `{"transport":"http","url":"http://169.254.169.254/latest/meta-data/"}`, "link-local"},
		{"mapped private address over SSE", `{"transport":"sse","url":"http://[::ffff:10.0.0.1]:8080/sse"}`, "private"},
		{"kiln itself, allowed or not", `{"transport":"http","url":"` + self.URL + `/mcp"}`, "kiln's own listener"},
		{"closed port allowed", `{"transport":"http","url":"http://` + closed + `/mcp"}`, "connection refused"},
		{"web server that is not MCP", `{"transport":"http","url":"` + web.URL + `/mcp"}`, "unexpected content type"},
		{"redirect to a refused address", `{"transport":"http","url":"` + redirector.URL + `/mcp"}`, "redirect to"},
	}
	const want = `backend "probe" could not be registered: the address is not allowed or did not answer as an MCP server; check the URL, or ask kiln's operator to allow the host in gateway.registration.allow_hosts`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(logs.String())
			_, err := c.Register(t.Context(), "probe", json.RawMessage(tc.def))
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			if logged := logs.String()[before:]; !strings.Contains(logged, tc.reason) {
				t.Errorf("kiln's log lacks the reason %q:\n%s", tc.reason, logged)
			}
			if names := c.opts.Registry.BackendNames(); len(names) != 0 {
				t.Errorf("registered after a failure: %v", names)
			}
		})
	}

	// Allowed, the same MCP server registers and its tools are listed.
	c, _ = liveCatalog(t, selfAddr, host(target))
	m, err := c.Register(t.Context(), "probe", json.RawMessage(`{"transport":"http","url":"`+target.URL+`/mcp"}`))
	if err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if len(m.Tools) != 1 || m.Tools[0].Name != "ping" {
		t.Errorf("tools = %+v", m.Tools)
	}
}
