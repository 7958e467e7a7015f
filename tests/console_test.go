//go:build e2e

package tests

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"
)

const (
	consoleClient = "kiln-console"
	consoleSecret = "console-secret-for-tests"
)

// oidcRig is a real OAuth 2.1 authorization server (go-oauth2/oauth2 v4,
// PKCE forced) extended to OpenID Connect: a discovery document, a JWKS
// and an RS256 ID token (with the authorize request's nonce) in the token
// response. Approving the login is the step a test cannot hand to a real
// part: the user is always alice of group ops.
type oidcRig struct {
	srv   *httptest.Server
	is    *issuer
	mu    sync.Mutex
	nonce string // the last authorize request's: one login at a time
}

func startOIDC(t *testing.T) *oidcRig {
	t.Helper()
	r := &oidcRig{is: newIssuer(t)}
	mgr := manage.NewDefaultManager()
	mgr.MustTokenStorage(store.NewMemoryTokenStore())
	clients := store.NewClientStore()
	_ = clients.Set(consoleClient, &models.Client{ID: consoleClient, Secret: consoleSecret, Domain: "http://127.0.0.1"})
	mgr.MapClientStorage(clients)
	mgr.SetValidateURIHandler(func(_, redirect string) error {
		if u, err := url.Parse(redirect); err != nil || u.Hostname() != "127.0.0.1" || u.Path != "/console/callback" {
			return errors.ErrInvalidRedirectURI
		}
		return nil
	})
	srv := server.NewDefaultServer(mgr)
	srv.Config.ForcePKCE = true
	srv.SetUserAuthorizationHandler(func(_ http.ResponseWriter, req *http.Request) (string, error) {
		r.mu.Lock()
		r.nonce = req.FormValue("nonce")
		r.mu.Unlock()
		return "alice", nil
	})
	srv.SetExtensionFieldsHandler(func(ti oauth2.TokenInfo) map[string]any {
		r.mu.Lock()
		nonce := r.nonce
		r.mu.Unlock()
		return map[string]any{"id_token": r.idToken(t, map[string]any{"sub": ti.GetUserID(), "aud": consoleClient, "nonce": nonce,
			"email": "alice@example.test", "groups": []string{"ops"}})}
	})
	mux := http.NewServeMux()
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, req *http.Request) {
		if err := srv.HandleAuthorizeRequest(w, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) { _ = srv.HandleTokenRequest(w, req) })
	mux.HandleFunc("/jwks", r.is.jwks.Config.Handler.ServeHTTP)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": r.srv.URL, "authorization_endpoint": r.srv.URL + "/authorize",
			"token_endpoint": r.srv.URL + "/token", "jwks_uri": r.srv.URL + "/jwks", "response_types_supported": []string{"code"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	return r
}

// idToken signs claims (iss, iat and exp added) with the rig's key.
func (r *oidcRig) idToken(t *testing.T, claims map[string]any) string {
	c := map[string]any{"iss": r.srv.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	b64 := base64.RawURLEncoding.EncodeToString
	hb, _ := json.Marshal(map[string]any{"alg": "RS256", "kid": "e2e", "typ": "JWT"})
	cb, _ := json.Marshal(c)
	in := b64(hb) + "." + b64(cb)
	digest := sha256.Sum256([]byte(in))
	sig, err := r.is.key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		t.Error(err)
	}
	return in + "." + b64(sig)
}

// consoleConfig is a kiln config with the console behind rig's login, the
// reference everything server and a workspace at root.
func consoleConfig(t *testing.T, rig *oidcRig, root string) string {
	gw := fmt.Sprintf("  console:\n    enabled: true\n    oidc:\n      issuer: %s\n      client_id: %s\n      client_secret: %s\n    allowed: [\"group:ops\"]",
		rig.srv.URL, consoleClient, consoleSecret)
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: gw})
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "  ws:\n    transport: workspace\n    root: %s\n", root)
	f.Close()
	return cfg
}

// kilnPID finds the kiln serving cfg.
func kilnPID(t *testing.T, cfg string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), cfg) && strings.Contains(string(b), "serve") {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			return pid
		}
	}
	t.Fatalf("no kiln process serves %s", cfg)
	return 0
}

// childMatching is a child of parent whose command line contains s.
func childMatching(parent int, s string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmd), s) {
			return pid
		}
	}
	return 0
}

// screens is where the browser test leaves its screenshots.
func screens(t *testing.T) string {
	dir := filepath.Join(repoRoot(t), ".cache", "testrun", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConsoleInBrowser drives the console in Debian's headless Chromium:
// an OpenID Connect login through a real authorization server, every page,
// a search, a workspace file and an exec, and the live log seeing a
// backend killed with kill -9 go down and come back.
func TestConsoleInBrowser(t *testing.T) {
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install chromium; .ci/run does)")
	}
	rig := startOIDC(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := consoleConfig(t, rig, root)
	base := startHTTP(t, "--config", cfg)
	s := newMCPGoHTTP(t, base)
	_ = s
	out := screens(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("headless", "new"), chromedp.WindowSize(1100, 900), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	defer cancelT()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name+".png"), buf, 0o644)
		})
	}
	var text string
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Login: /console/ sends the browser to the provider and back.
	must("login", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible("#backends"), chromedp.Text("header .who", &text))
	if !strings.Contains(text, "alice@example.test") {
		t.Errorf("header after login: %q", text)
	}
	// Wait for everything to be healthy, then the overview's picture.
	deadline := time.Now().Add(60 * time.Second)
	for {
		must("overview", chromedp.Navigate(base+"/console/"), chromedp.Text(`tr[data-backend="everything"] .state`, &text))
		if text == "healthy" || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if text != "healthy" {
		t.Fatalf("everything is %q on the overview", text)
	}
	must("overview shot", shot("overview"))

	must("backend page", chromedp.Navigate(base+"/console/backends/everything"), chromedp.Text("main", &text), shot("backend"))
	if !strings.Contains(text, "everything.get-sum") {
		t.Errorf("backend page lacks its tools: %.300s", text)
	}

	must("search", chromedp.Navigate(base+"/console/search"), chromedp.SendKeys(`input[name="q"]`, "add two numbers"),
		chromedp.Submit(`input[name="q"]`), chromedp.WaitVisible("#hits"), chromedp.Text("#hits tbody tr:first-child", &text), shot("search"))
	if !strings.Contains(text, "everything.get-sum") || !strings.Contains(text, "bm25") {
		t.Errorf("first hit for 'add two numbers': %q", text)
	}

	must("workspace file", chromedp.Navigate(base+"/console/workspaces/ws"), chromedp.Click(`#tree a`), chromedp.WaitVisible("#file"),
		chromedp.Text("#file", &text))
	if !strings.Contains(text, "remember the milk") {
		t.Errorf("file view: %q", text)
	}
	must("exec", chromedp.Navigate(base+"/console/workspaces/ws"), chromedp.SendKeys(`#exec input[name="command"]`, "echo from-the-console; ls"),
		chromedp.Submit(`#exec input[name="command"]`), chromedp.WaitVisible("#exec-output"), chromedp.Text("#exec-output", &text), shot("workspace"))
	if !strings.Contains(text, "from-the-console") || !strings.Contains(text, "notes.txt") {
		t.Errorf("exec output: %q", text)
	}

	// The live log follows a backend killed with kill -9: down, then up.
	must("log", chromedp.Navigate(base+"/console/log"), chromedp.WaitVisible("#log"))
	pid := childMatching(kilnPID(t, cfg), "server-everything")
	if pid == 0 {
		t.Fatal("no server-everything process under kiln")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		must("log rows", chromedp.Text("#log tbody", &text))
		// Newest first: the newest state change is the way back up, and
		// the way down is below it.
		newest, _, _ := strings.Cut(text[max(strings.Index(text, "everything state "), 0):], "\n")
		if strings.HasSuffix(strings.TrimSpace(newest), "→ healthy") && strings.Contains(text, "everything state healthy → ") || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	must("log shot", shot("log"))
	if !strings.Contains(text, "exec") || !strings.Contains(text, "ws.Bash") {
		t.Errorf("the live log lacks the exec: %.500s", text)
	}
	if newest, _, _ := strings.Cut(text[max(strings.Index(text, "everything state "), 0):], "\n"); !strings.Contains(text, "everything state healthy → ") || !strings.HasSuffix(strings.TrimSpace(newest), "→ healthy") {
		t.Errorf("the live log did not show everything coming back after kill -9: %.800s", text)
	}
	t.Logf("screenshots in %s", out)
}
