//go:build e2e

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// addScopedEndpoint serves, next to the rig's /mcp, an MCP server at
// /scoped whose tokens need scope "read", and whose tool admin_only needs
// "admin" too: a call to it with a lesser token gets 403 insufficient_scope
// naming "admin", as hosted servers ask for step-up on one operation.
func (r *oauthRig) addScopedEndpoint(t *testing.T) string {
	t.Helper()
	ms := sdk.NewServer(&sdk.Implementation{Name: "scoped", Version: "1"}, nil)
	for _, name := range []string{"public", "admin_only"} {
		sdk.AddTool(ms, &sdk.Tool{Name: name, Description: "answers " + name},
			func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ok"}}}, nil, nil
			})
	}
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ti, err := r.mgr.LoadAccessToken(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: ti.GetUserID(), Scopes: strings.Fields(ti.GetScope()),
			Expiration: ti.GetAccessCreateAt().Add(ti.GetAccessExpiresIn())}, nil
	}
	prm := r.mcp.URL + "/.well-known/oauth-protected-resource/scoped"
	r.mux.Handle("/.well-known/oauth-protected-resource/scoped", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: r.mcp.URL + "/scoped", AuthorizationServers: []string{r.as.URL}, ScopesSupported: []string{"read", "admin"}}))
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ms }, nil)
	stepUp := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && msg.Params.Name == "admin_only" && !slices.Contains(auth.TokenInfoFromContext(req.Context()).Scopes, "admin") {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="admin", resource_metadata=%q`, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, req)
	})
	r.mux.Handle("/scoped", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm, Scopes: []string{"read"}})(stepUp))
	return r.mcp.URL + "/scoped"
}

// TestOAuthStepUpInteractive: a backend a person logged in to asks for more
// scope on one tool while kiln serves. The call fails with needs_login and
// the exact login command (the scopes held plus the one asked for),
// kiln://backend/NAME shows the same, the other tools keep working; after
// that command the same kiln process makes the call with the new token.
// The client credentials backend on the same server steps up by itself.
func TestOAuthStepUpInteractive(t *testing.T) {
	rig := startOAuthRig(t)
	scopedURL := rig.addScopedEndpoint(t)
	state := t.TempDir()
	t.Setenv("KILN_E2E_OAUTH_SECRET", oauthSecret)
	cfgText := fmt.Sprintf(`version: 1
gateway:
  state_dir: %[1]s
  expose: direct
backends:
  scoped:
    transport: http
    url: %[2]s
    auth:
      client_id: %[3]s
      client_secret: ${KILN_E2E_OAUTH_SECRET}
  robot:
    transport: http
    url: %[2]s
    auth:
      grant: client_credentials
      client_id: %[3]s
      client_secret: ${KILN_E2E_OAUTH_SECRET}
`, state, scopedURL, oauthClientID)
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kilnAuth(t, cfg, "login", "scoped"); err != nil || !strings.Contains(out, "logged in to scoped (2 tools)") {
		t.Fatalf("login: %v\n%s", err, out)
	}
	if got := storedScopes(t, state, "scoped"); !slices.Equal(got, []string{"read"}) {
		t.Fatalf("scopes after the first login = %q; want [read] (from the challenge)", got)
	}

	k := startFaultKilnWith(t, cfgText)
	public, admin := toolNamed(t, k, "scoped", "public"), toolNamed(t, k, "scoped", "admin_only")
	if r := k.call(t.Context(), public, nil, nil); r.IsError || r.Text() != "public ok" {
		t.Fatalf("%s: isError=%v %q", public, r.IsError, r.Text())
	}
	const command = "kiln auth login scoped --scope 'read admin'"
	r := k.call(t.Context(), admin, nil, nil)
	if !r.IsError || !strings.Contains(r.Text(), "needs_login") || !strings.Contains(r.Text(), command) {
		t.Fatalf("%s with a read-only token: isError=%v %q; want needs_login and %q", admin, r.IsError, r.Text(), command)
	}
	view := k.resource("kiln://backend/scoped")
	if !strings.Contains(view, `"state": "needs_login"`) || !strings.Contains(view, command) {
		t.Errorf("kiln://backend/scoped after the step-up refusal:\n%s\nwant state needs_login and %q", view, command)
	}
	if r := k.call(t.Context(), public, nil, nil); r.IsError || r.Text() != "public ok" {
		t.Errorf("%s while admin_only needs a login: isError=%v %q; the other tools must keep working", public, r.IsError, r.Text())
	}

	// The person runs the command while kiln keeps serving.
	if out, err := kilnAuth(t, cfg, "login", "scoped", "--scope", "read admin"); err != nil || !strings.Contains(out, "logged in to scoped") {
		t.Fatalf("step-up login: %v\n%s", err, out)
	}
	if got := storedScopes(t, state, "scoped"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"admin", "read"}) {
		t.Errorf("scopes after the step-up login = %q; want the union [read admin]", got)
	}
	if r := k.call(t.Context(), admin, nil, nil); r.IsError || r.Text() != "admin_only ok" {
		t.Fatalf("%s after the step-up login: isError=%v %q", admin, r.IsError, r.Text())
	}
	if view := k.resource("kiln://backend/scoped"); strings.Contains(view, "needs_login") {
		t.Errorf("kiln://backend/scoped still says needs_login after the tool answered:\n%s", view)
	}

	// Client credentials: no person, so kiln asks for the scope itself.
	robot := toolNamed(t, k, "robot", "admin_only")
	if r := k.call(t.Context(), robot, nil, nil); r.IsError || r.Text() != "admin_only ok" {
		t.Errorf("%s (client credentials step-up): isError=%v %q", robot, r.IsError, r.Text())
	}
	if got := storedScopes(t, state, "robot"); !slices.Contains(got, "admin") || !slices.Contains(got, "read") {
		t.Errorf("client credentials scopes after step-up = %q; want read and admin", got)
	}
}

// storedScopes reads the scopes kiln stored with a backend's token.
func storedScopes(t *testing.T, state, backend string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "oauth", backend+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Scopes
}

// TestOAuthLoginSlowApproval: a person takes longer than mcp-go's 5 s
// server/discover probe to approve in the browser; the login still
// completes with one authorization, instead of the probe giving up on it
// and the fallback handshake asking for a second. The browser here is a
// script that waits 6 s before following the URL: the wait is the
// behaviour under test, so there is no signal to await instead.
func TestOAuthLoginSlowApproval(t *testing.T) {
	rig := startOAuthRig(t)
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(rig.config(t, state)), 0o644); err != nil {
		t.Fatal(err)
	}
	browser := filepath.Join(t.TempDir(), "slow-browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nsleep 6\nexec curl -s -o /dev/null -L \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), kilnBin(t), "auth", "login", "hosted", "--config", cfg)
	cmd.Env = append(os.Environ(), "BROWSER="+browser)
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	t.Logf("kiln auth login hosted:\n%s", out)
	if err != nil || !strings.Contains(out, "logged in to hosted") {
		t.Fatalf("slow login: %v", err)
	}
	if n := strings.Count(out, "Open this URL"); n != 1 {
		t.Errorf("the person was asked %d times; want once", n)
	}
}
