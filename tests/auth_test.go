//go:build e2e

package tests

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPBeyondLoopbackNeedsAuth binds all interfaces without
// gateway.http.auth_token: kiln must refuse to start rather than serve
// unauthenticated, and say which setting is missing.
func TestHTTPBeyondLoopbackNeedsAuth(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kilnBin(t), "serve", "--config", cfg, "--http", "0.0.0.0:0")
	cmd.Dir = repoRoot(t)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KILN_") })
	out, err := cmd.CombinedOutput()
	t.Logf("kiln: %s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("kiln serve --http 0.0.0.0:0 without auth: err=%v, want a non-zero exit", err)
	}
	if !strings.Contains(string(out), "gateway.http.auth_token") {
		t.Errorf("the refusal does not name gateway.http.auth_token")
	}
	if strings.Contains(string(out), "serving MCP at") {
		t.Errorf("kiln reported serving before refusing")
	}
}

// TestHTTPBearerAuth runs kiln with a bearer token from the environment
// and checks what each kind of caller gets.
func TestHTTPBearerAuth(t *testing.T) {
	token := rand.Text()
	t.Setenv("KILN_TEST_TOKEN", token)
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: "  http:\n    auth_token: ${KILN_TEST_TOKEN}"})
	base := startHTTP(t, "--config", cfg)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	metadataURL := base + "/.well-known/oauth-protected-resource"
	initialize := request("1", "initialize", initializeParams)

	t.Run("mcp-go client with the token", func(t *testing.T) {
		c, err := mcpclient.NewStreamableHttpClient(base+"/mcp",
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		s := startMCPGo(t, c)
		names, err := s.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if diff := cmp.Diff(metaTools, names); diff != "" {
			t.Errorf("tools/list (-want +got):\n%s", diff)
		}
		r, err := s.Call(t.Context(), "search_tools", map[string]any{"task_description": "echo a message"})
		if err != nil || r.IsError || !strings.Contains(r.Text(), "everything.echo") {
			t.Errorf("search_tools: err=%v isError=%v %q", err, r.IsError, r.Text())
		}
	})

	t.Run("mcp-go client with a wrong token", func(t *testing.T) {
		c, err := mcpclient.NewStreamableHttpClient(base+"/mcp",
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer not-" + token}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err = c.Initialize(t.Context(), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
			ClientInfo: mcpgo.Implementation{Name: "kiln-e2e", Version: "1"},
		}})
		// The client found the metadata document through WWW-Authenticate,
		// where an OAuth-capable client would start its flow.
		var authErr *transport.AuthorizationRequiredError
		if !errors.As(err, &authErr) || authErr.ResourceMetadataURL != metadataURL {
			t.Errorf("initialize with a wrong token: %v, want an authorization error naming %s", err, metadataURL)
		}
	})

	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		header     map[string]string
		host       string
		status     int
		wantHeader map[string]string // exact values
		wantBody   string            // exact, when set
	}{
		{name: "wrong token", method: http.MethodPost, url: base + "/mcp", body: initialize,
			header: map[string]string{"Authorization": "Bearer wrong"}, status: http.StatusUnauthorized,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer resource_metadata="` + metadataURL + `", error="invalid_token"`},
			wantBody:   "unauthorized\n"},
		{name: "no token", method: http.MethodPost, url: base + "/mcp", body: initialize, status: http.StatusUnauthorized,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer resource_metadata="` + metadataURL + `"`},
			wantBody:   "unauthorized\n"},
		{name: "not a bearer scheme", method: http.MethodPost, url: base + "/mcp", body: initialize,
			header: map[string]string{"Authorization": "Basic " + token}, status: http.StatusUnauthorized,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer resource_metadata="` + metadataURL + `", error="invalid_token"`},
			wantBody:   "unauthorized\n"},
		{name: "no token on the legacy SSE endpoint", method: http.MethodGet, url: base + "/sse", status: http.StatusUnauthorized,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer resource_metadata="` + metadataURL + `"`}},
		{name: "right token", method: http.MethodPost, url: base + "/mcp", body: initialize,
			header: map[string]string{"Authorization": "Bearer " + token}, status: http.StatusOK},
		{name: "metadata needs no token", method: http.MethodGet, url: metadataURL, status: http.StatusOK,
			wantHeader: map[string]string{"Content-Type": "application/json"},
			wantBody:   `{"resource":"` + base + `","bearer_methods_supported":["header"]}` + "\n"},
		{name: "metadata for /mcp", method: http.MethodGet, url: metadataURL + "/mcp", status: http.StatusOK,
			wantBody: `{"resource":"` + base + `/mcp","bearer_methods_supported":["header"]}` + "\n"},
		{name: "foreign Origin", method: http.MethodPost, url: base + "/mcp", body: initialize,
			header: map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}, status: http.StatusForbidden},
		{name: "loopback Origin", method: http.MethodPost, url: base + "/mcp", body: initialize,
			header: map[string]string{"Authorization": "Bearer " + token, "Origin": "http://localhost:3000"}, status: http.StatusOK,
			wantHeader: map[string]string{"Access-Control-Allow-Origin": "http://localhost:3000"}},
		{name: "foreign Host", method: http.MethodPost, url: base + "/mcp", body: initialize, host: "evil.example:" + u.Port(),
			header: map[string]string{"Authorization": "Bearer " + token}, status: http.StatusMisdirectedRequest},
		{name: "foreign Host without a token", method: http.MethodPost, url: base + "/mcp", body: initialize, host: "evil.example",
			status: http.StatusMisdirectedRequest},
		{name: "localhost Host", method: http.MethodPost, url: base + "/mcp", body: initialize, host: "localhost:" + u.Port(),
			header: map[string]string{"Authorization": "Bearer " + token}, status: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel() // ends the SSE stream of a request that got through
			req, err := http.NewRequestWithContext(ctx, tc.method, tc.url, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %s, want %d", resp.Status, tc.status)
			}
			for k, want := range tc.wantHeader {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if tc.wantBody != "" {
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.wantBody, string(body)); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
			if tc.status == http.StatusOK && tc.body != "" {
				var r rpcReply
				if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil || string(r.ID) != "1" {
					t.Errorf("initialize through the guard: err=%v reply=%+v", err, r)
				}
			}
		})
	}
}
