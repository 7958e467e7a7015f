//go:build e2e

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

const (
	oauthClientID = "kiln-e2e"
	oauthSecret   = "e2e-client-secret-0123456789"
	// accessTTL is under x/oauth2's ten-second expiry margin, so kiln
	// treats every access token as due and refreshes before each request:
	// refresh is exercised on every call without waiting for a clock.
	accessTTL = 5 * time.Second
)

// oauthRig is a real OAuth 2.1 authorization server (go-oauth2/oauth2 v4:
// authorization code with forced PKCE, refresh with rotation, client
// credentials) and an MCP server (the go-sdk's, behind its bearer-token
// middleware and RFC 9728 metadata) whose tokens it issues.
type oauthRig struct {
	as, mcp   *httptest.Server
	mux       *http.ServeMux // the MCP server's, for tests that add endpoints
	mgr       *manage.Manager
	refreshes atomic.Int64 // refresh_token grants the server answered
	release   chan struct{}
	started   chan struct{}
}

func startOAuthRig(t *testing.T) *oauthRig {
	t.Helper()
	r := &oauthRig{release: make(chan struct{}), started: make(chan struct{}, 8)}
	mgr := manage.NewDefaultManager()
	mgr.SetAuthorizeCodeTokenCfg(&manage.Config{AccessTokenExp: accessTTL, RefreshTokenExp: time.Hour, IsGenerateRefresh: true})
	mgr.SetRefreshTokenCfg(&manage.RefreshingConfig{AccessTokenExp: accessTTL, IsGenerateRefresh: true, IsRemoveRefreshing: true})
	mgr.SetClientTokenCfg(&manage.Config{AccessTokenExp: time.Hour})
	mgr.MustTokenStorage(store.NewMemoryTokenStore())
	clients := store.NewClientStore()
	_ = clients.Set(oauthClientID, &models.Client{ID: oauthClientID, Secret: oauthSecret, Domain: "http://127.0.0.1"})
	mgr.MapClientStorage(clients)
	// RFC 8252: a native app's loopback redirect may use any port.
	mgr.SetValidateURIHandler(func(_, redirect string) error {
		u, err := url.Parse(redirect)
		if err != nil || u.Hostname() != "127.0.0.1" {
			return errors.ErrInvalidRedirectURI
		}
		return nil
	})
	r.mgr = mgr
	srv := server.NewDefaultServer(mgr)
	srv.Config.ForcePKCE = true
	// The person clicking "allow": approval is the one step a test cannot
	// hand to a real part.
	srv.SetUserAuthorizationHandler(func(http.ResponseWriter, *http.Request) (string, error) { return "alice", nil })
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, req *http.Request) {
		if err := srv.HandleAuthorizeRequest(w, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) {
		if req.ParseForm() == nil && req.PostForm.Get("grant_type") == "refresh_token" {
			r.refreshes.Add(1)
		}
		_ = srv.HandleTokenRequest(w, req)
	})
	r.as = httptest.NewServer(mux)
	t.Cleanup(r.as.Close)
	// go-oauth2 implements the grants but publishes no RFC 8414 document;
	// this is that document, describing the endpoints above.
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": r.as.URL, "authorization_endpoint": r.as.URL + "/authorize", "token_endpoint": r.as.URL + "/token",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		})
	})

	ms := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(ms, &sdk.Tool{Name: "whoami", Description: "says who the token belongs to"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			user := "unknown" // the go-sdk's SSE handler does not pass TokenInfo on
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				user = req.Extra.TokenInfo.UserID
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "user " + user}}}, nil, nil
		})
	sdk.AddTool(ms, &sdk.Tool{Name: "slow", Description: "returns when the test releases it"},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			r.started <- struct{}{}
			select {
			case <-r.release:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow done"}}}, nil, nil
		})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ti, err := mgr.LoadAccessToken(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: ti.GetUserID(), Expiration: ti.GetAccessCreateAt().Add(ti.GetAccessExpiresIn())}, nil
	}
	mmux := http.NewServeMux()
	r.mcp, r.mux = httptest.NewServer(mmux), mmux
	t.Cleanup(r.mcp.Close)
	prm := r.mcp.URL + "/.well-known/oauth-protected-resource/mcp"
	mmux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: r.mcp.URL + "/mcp", AuthorizationServers: []string{r.as.URL}}))
	mmux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ms }, nil)))
	ssePRM := r.mcp.URL + "/.well-known/oauth-protected-resource/sse"
	mmux.Handle("/.well-known/oauth-protected-resource/sse", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: r.mcp.URL + "/sse", AuthorizationServers: []string{r.as.URL}}))
	mmux.Handle("/sse", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: ssePRM})(
		sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return ms }, nil)))
	return r
}

func (r *oauthRig) config(t *testing.T, state string) string {
	t.Helper()
	t.Setenv("KILN_E2E_OAUTH_SECRET", oauthSecret)
	return fmt.Sprintf(`version: 1
gateway:
  state_dir: %[1]s
  expose: direct
backends:
  hosted:
    transport: http
    url: %[2]s/mcp
    auth:
      client_id: %[3]s
      client_secret: ${KILN_E2E_OAUTH_SECRET}
  robot:
    transport: http
    url: %[2]s/mcp
    auth:
      grant: client_credentials
      client_id: %[3]s
      client_secret: ${KILN_E2E_OAUTH_SECRET}
  legacy:
    transport: sse
    url: %[2]s/sse
    auth:
      client_id: %[3]s
      client_secret: ${KILN_E2E_OAUTH_SECRET}
`, state, r.mcp.URL, oauthClientID)
}

// kilnAuth runs `kiln auth ARGS --config cfg`; the "browser" is curl,
// which follows the authorization server's redirect to kiln's loopback
// listener as a browser would.
func kilnAuth(t *testing.T, cfg string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kilnBin(t), append(append([]string{"auth"}, args...), "--config", cfg)...)
	cmd.Env = append(os.Environ(), "BROWSER=curl -s -o /dev/null -L")
	out, err := cmd.CombinedOutput()
	t.Logf("kiln auth %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// toolNamed waits until kiln lists a tool whose name contains part (the
// backends are not compiled in, so their tools appear once they connect).
func toolNamed(t *testing.T, k *faultKiln, backend, tool string) string {
	t.Helper()
	var name string
	eventually(t, "a tool named like "+backend+" "+tool, func() bool {
		res, err := k.c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if strings.Contains(tl.Name, backend) && strings.Contains(tl.Name, tool) {
				name = tl.Name
				return true
			}
		}
		return false
	})
	return name
}

// TestOAuthLoginServeRefresh logs in through the browser flow, serves, and
// keeps a long call running while later calls refresh the token.
func TestOAuthLoginServeRefresh(t *testing.T) {
	rig := startOAuthRig(t)
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(rig.config(t, state)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ := kilnAuth(t, cfg, "status"); !strings.Contains(out, "hosted: needs_login; run: kiln auth login hosted") {
		t.Errorf("status before login: %q", out)
	}
	out, err := kilnAuth(t, cfg, "login", "hosted")
	if err != nil || !strings.Contains(out, "logged in to hosted (2 tools)") {
		t.Fatalf("login: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(state, "oauth", "hosted.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if out, _ := kilnAuth(t, cfg, "status"); !strings.Contains(out, "hosted: logged in (authorization_code)") || strings.Contains(out, storedAccess(t, state)) {
		t.Errorf("status after login (must not show the token): %q", out)
	}

	k := startFaultKilnWith(t, rig.config(t, state))
	whoami, slow := toolNamed(t, k, "hosted", "whoami"), toolNamed(t, k, "hosted", "slow")
	if r := k.call(t.Context(), whoami, nil, nil); r.IsError || r.Text() != "user alice" {
		t.Fatalf("%s: isError=%v %q", whoami, r.IsError, r.Text())
	}
	longDone := make(chan result, 1)
	go func() { longDone <- k.call(t.Context(), slow, nil, nil) }()
	<-rig.started
	before := rig.refreshes.Load()
	for i := range 3 {
		if r := k.call(t.Context(), whoami, nil, nil); r.IsError || r.Text() != "user alice" {
			t.Fatalf("call %d during the long call: isError=%v %q", i, r.IsError, r.Text())
		}
	}
	if rig.refreshes.Load() <= before {
		t.Errorf("no refresh_token grant while the long call ran (refreshes %d before, %d after)", before, rig.refreshes.Load())
	}
	close(rig.release)
	if r := <-longDone; r.IsError || r.Text() != "slow done" {
		t.Errorf("long call: isError=%v %q", r.IsError, r.Text())
	}
	if k.logged(storedAccess(t, state)) {
		t.Error("kiln logged an access token")
	}

	// The client credentials backend needs no login at all.
	robot := toolNamed(t, k, "robot", "whoami")
	if r := k.call(t.Context(), robot, nil, nil); r.IsError || !strings.HasPrefix(r.Text(), "user") {
		t.Errorf("%s (client credentials): isError=%v %q", robot, r.IsError, r.Text())
	}

	// A refresh token the server no longer honours: the next call says
	// needs_login and names the command.
	if err := rig.mgr.RemoveRefreshToken(t.Context(), storedRefresh(t, state)); err != nil {
		t.Fatal(err)
	}
	r := k.call(t.Context(), whoami, nil, nil)
	if !r.IsError || !strings.Contains(r.Text(), "needs_login") || !strings.Contains(r.Text(), "kiln auth login hosted") {
		t.Errorf("call after the refresh token was revoked: isError=%v %q; want needs_login and the login command", r.IsError, r.Text())
	}
	// A kiln started now cannot connect: kiln://backend/hosted says
	// needs_login and the command.
	k2 := startFaultKilnWith(t, rig.config(t, state))
	var view string
	eventually(t, "kiln://backend/hosted shows needs_login", func() bool {
		res, err := k2.c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "kiln://backend/hosted"}})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res.Contents)
		view = string(raw)
		return strings.Contains(view, `\"state\": \"needs_login\"`) && strings.Contains(view, "kiln auth login hosted")
	})
	if out, _ := kilnAuth(t, cfg, "logout", "hosted"); !strings.Contains(out, "logged out of hosted") {
		t.Errorf("logout: %q", out)
	}
	if _, err := os.Stat(filepath.Join(state, "oauth", "hosted.json")); !os.IsNotExist(err) {
		t.Errorf("token file after logout: %v", err)
	}
}

// TestOAuthTwoProcessesShareStore runs two kiln processes on one token
// store against a server that rotates refresh tokens: each refresh spends
// the previous refresh token, so a process that refreshed from a stale copy
// would be refused and fall to needs_login.
func TestOAuthTwoProcessesShareStore(t *testing.T) {
	rig := startOAuthRig(t)
	state := t.TempDir()
	cfgText := rig.config(t, state)
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kilnAuth(t, cfg, "login", "hosted"); err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	ks := []*faultKiln{startFaultKilnWith(t, cfgText), startFaultKilnWith(t, cfgText)}
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for _, k := range ks {
		name := toolNamed(t, k, "hosted", "whoami")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if r := k.call(t.Context(), name, nil, nil); r.IsError || r.Text() != "user alice" {
					errs <- fmt.Sprintf("call %d: isError=%v %q", i, r.IsError, r.Text())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var got []string
	for e := range errs {
		got = append(got, e)
	}
	if len(got) > 0 {
		t.Errorf("calls failed while two processes shared the store:\n%s", strings.Join(got, "\n"))
	}
	if n := rig.refreshes.Load(); n < 2 {
		t.Errorf("%d refreshes; the test needs both processes refreshing", n)
	}
	raw, err := os.ReadFile(filepath.Join(state, "oauth", "hosted.json"))
	if err != nil || !json.Valid(raw) {
		t.Errorf("token file after concurrent refreshes is not valid JSON: %v\n%s", err, raw)
	}
	if slices.ContainsFunc(ks, func(k *faultKiln) bool { return k.logged("refresh token was refused") }) {
		t.Error("a process fell to needs_login")
	}
}

func storedRecord(t *testing.T, state string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(state, "oauth", "hosted.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Token map[string]any }
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Token
}

func storedAccess(t *testing.T, state string) string {
	s, _ := storedRecord(t, state)["access_token"].(string)
	return s
}

func storedRefresh(t *testing.T, state string) string {
	s, _ := storedRecord(t, state)["refresh_token"].(string)
	return s
}

// TestOAuthSSEAndRecord logs in to an SSE backend and records every
// backend with kiln-gen, which refreshes the stored tokens as it goes.
func TestOAuthSSEAndRecord(t *testing.T) {
	rig := startOAuthRig(t)
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(rig.config(t, state)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"hosted", "legacy"} {
		if out, err := kilnAuth(t, cfg, "login", b); err != nil || !strings.Contains(out, "logged in to "+b) {
			t.Fatalf("login %s: %v\n%s", b, err, out)
		}
	}
	before := rig.refreshes.Load()
	manifests := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join(filepath.Dir(kilnBin(t)), "kiln-gen"), "record", "--config", cfg, "--manifests", manifests)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kiln-gen record: %v\n%s", err, out)
	}
	for _, b := range []string{"hosted", "legacy", "robot"} {
		raw, err := os.ReadFile(filepath.Join(manifests, b+".json"))
		if err != nil || !strings.Contains(string(raw), `"whoami"`) {
			t.Errorf("manifest %s: %v\n%s", b, err, out)
		}
	}
	if rig.refreshes.Load() <= before {
		t.Errorf("kiln-gen record did not refresh the expired stored tokens")
	}
	k := startFaultKilnWith(t, rig.config(t, state))
	name := toolNamed(t, k, "legacy", "whoami")
	if r := k.call(t.Context(), name, nil, nil); r.IsError || !strings.HasPrefix(r.Text(), "user ") {
		t.Errorf("%s over SSE: isError=%v %q", name, r.IsError, r.Text())
	}
}
