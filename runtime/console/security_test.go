package console

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// source stands in for the MCP server: these tests are about who gets in
// and what leaves, not what the views say (tests/console_test.go drives a
// real kiln).
type source struct{}

func (source) Resource(_ context.Context, uri string) (any, error) {
	return map[string]any{"uri": uri}, nil
}
func (source) SearchPeople(context.Context, string, int) []server.PeopleHit { return nil }
func (source) ToolSchema(_ context.Context, id string) (json.RawMessage, bool) {
	return json.RawMessage(`{}`), id == "a.b"
}
func (source) ToolDocs(context.Context) string { return "# Tools\n" }

// bash stands in for the workspace's Bash tool behind the gateway.
type bash struct{}

func (bash) CallTool(_ context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	return toolcall.Text("ran " + backend + "." + tool), nil
}

// provider is an OpenID provider whose token endpoint answers whatever ID
// token the test sets, so each flaw can be served once.
type provider struct {
	srv   *httptest.Server
	key   *rsa.PrivateKey
	mu    sync.Mutex
	nonce string
	mint  func(nonce string) string
}

func newProvider(t testing.TB) *provider {
	p := &provider{}
	p.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "authorization_endpoint": p.srv.URL + "/authorize",
			"token_endpoint": p.srv.URL + "/token", "jwks_uri": p.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.nonce = r.URL.Query().Get("nonce")
		p.mu.Unlock()
		http.Redirect(w, r, r.URL.Query().Get("redirect_uri")+"?code=c1&state="+url.QueryEscape(r.URL.Query().Get("state")), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if id != "console" || secret != "s3cret" || r.PostFormValue("code_verifier") == "" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		tok := p.mint(p.nonce)
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"id_token": tok, "token_type": "Bearer", "access_token": "x"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k", "use": "sig", "alg": "RS256",
			"n": b64(p.key.N.Bytes()), "e": b64(big.NewInt(int64(p.key.E)).Bytes())}}})
	})
	return p
}

// token signs claims (over defaults) with alg.
func (p *provider) token(alg string, claims map[string]any) string {
	c := map[string]any{"iss": p.srv.URL, "sub": "alice", "aud": "console", "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix(), "email": "alice@example.test", "groups": []string{"ops"}}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	b64 := base64.RawURLEncoding.EncodeToString
	hb, _ := json.Marshal(map[string]string{"alg": alg, "kid": "k", "typ": "JWT"})
	cb, _ := json.Marshal(c)
	in := b64(hb) + "." + b64(cb)
	if alg == "none" {
		return in + "."
	}
	d := sha256.Sum256([]byte(in))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, d[:])
	return in + "." + b64(sig)
}

// rig is a console behind a real front-door guard that requires a token.
type rig struct {
	c    *Console
	srv  *httptest.Server
	p    *provider
	root string
}

func newRig(t testing.TB, allowed ...string) *rig {
	return newRigWith(t, Options{}, true, allowed...)
}

// newRigWith is newRig with extra options (Allows, ScrubText) and a front
// door that checks tokens (tokens) or only lets loopback in.
func newRigWith(t testing.TB, extra Options, tokens bool, allowed ...string) *rig {
	p := newProvider(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("PLANTED-OUTSIDE"), 0o644)
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside"), 0o644)
	os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(root, "out"))
	os.Symlink(dir, filepath.Join(root, "updir"))
	if len(allowed) == 0 {
		allowed = []string{"group:ops"}
	}
	c := New(Options{Config: config.Console{Enabled: true, OIDC: &config.OIDC{Issuer: p.srv.URL, ClientID: "console", ClientSecret: "s3cret"}, Allowed: allowed},
		Source: source{}, Caller: bash{}, Workspaces: map[string]string{"ws": root}, Replica: "r1", Allows: extra.Allows, ScrubText: extra.ScrubText})
	t.Cleanup(c.Close)
	front := config.HTTP{AuthToken: "api-token"}
	if !tokens {
		front = config.HTTP{}
	}
	g, err := httpauth.New(front, httpauth.Options{Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{c: c, p: p, root: root}
	r.srv = httptest.NewServer(c.Handler(g.Protect, g.AuthRequired()))
	t.Cleanup(r.srv.Close)
	return r
}

// browser is a client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login runs the flow with mint as the provider's ID token and returns
// the callback's status.
func (r *rig) login(t *testing.T, b *http.Client, mint func(nonce string) string, tamper func(*url.URL)) int {
	r.p.mint = mint
	resp, err := b.Get(r.srv.URL + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	auth, _ := url.Parse(resp.Header.Get("Location"))
	resp, err = b.Get(auth.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb, _ := url.Parse(resp.Header.Get("Location"))
	if tamper != nil {
		tamper(cb)
	}
	resp, err = b.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestLoginRefusesForgeries(t *testing.T) {
	r := newRig(t)
	good := func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n}) }
	for _, c := range []struct {
		name   string
		mint   func(string) string
		tamper func(*url.URL)
	}{
		{"forged state", good, func(u *url.URL) { q := u.Query(); q.Set("state", "forged"); u.RawQuery = q.Encode() }},
		{"forged nonce", func(string) string { return r.p.token("RS256", map[string]any{"nonce": "forged"}) }, nil},
		{"no nonce", func(string) string { return r.p.token("RS256", nil) }, nil},
		{"another audience", func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n, "aud": "someone-else"}) }, nil},
		{"expired", func(n string) string {
			return r.p.token("RS256", map[string]any{"nonce": n, "exp": time.Now().Add(-time.Hour).Unix()})
		}, nil},
		{"alg none", func(n string) string { return r.p.token("none", map[string]any{"nonce": n}) }, nil},
		{"another issuer", func(n string) string {
			return r.p.token("RS256", map[string]any{"nonce": n, "iss": "https://evil.example"})
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := browser(t)
			if code := r.login(t, b, c.mint, c.tamper); code != http.StatusForbidden {
				t.Errorf("callback answered %d, want 403", code)
			}
			u, _ := url.Parse(r.srv.URL)
			for _, ck := range b.Jar.Cookies(u) {
				if ck.Name == sessionCookie {
					t.Errorf("a session cookie was set")
				}
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		b := browser(t)
		if code := r.login(t, b, good, nil); code != http.StatusOK {
			t.Fatalf("callback answered %d", code)
		}
		resp, err := b.Get(r.srv.URL + "/api/v1/backends")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("with the session: %v %v", resp.Status, err)
		}
	})
}

func TestCallbackCookies(t *testing.T) {
	r := newRig(t)
	b := browser(t)
	r.p.mint = func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n}) }
	resp, _ := b.Get(r.srv.URL + "/console/login")
	resp.Body.Close()
	resp, _ = b.Get(resp.Header.Get("Location"))
	resp.Body.Close()
	req, _ := http.NewRequest("GET", resp.Header.Get("Location"), nil)
	req.Header.Set("X-Forwarded-Proto", "https") // from a loopback proxy: trusted
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var found bool
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie && ck.Value != "" {
			found = true
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || !ck.Secure {
				t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Secure behind TLS", ck)
			}
		}
	}
	if !found {
		t.Fatal("no session cookie")
	}
}

func TestNotAllowedIsToldWhoTheyAre(t *testing.T) {
	r := newRig(t, "bob@example.test")
	b := browser(t)
	if code := r.login(t, b, func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n}) }, nil); code != http.StatusOK {
		t.Fatalf("login %d", code)
	}
	resp, _ := b.Get(r.srv.URL + "/console/")
	body := readAll(resp)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "alice@example.test") {
		t.Errorf("%d %s, want 403 naming alice", resp.StatusCode, body)
	}
	resp, _ = b.Get(r.srv.URL + "/api/v1/backends")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("API for a person not allowed: %d", resp.StatusCode)
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

// TestEveryRouteNeedsAuth enumerates the router: every route but the
// login flow, the stylesheet and logout refuses a request with no
// session or token, with a forged cookie and with a wrong token.
func TestEveryRouteNeedsAuth(t *testing.T) {
	r := newRig(t)
	open := map[string]bool{"GET /console/login": true, "GET /console/callback": true, "GET /console/assets/": true, "POST /console/logout": true}
	other := &auth{key: []byte("another key")}
	forged := other.sign(session{Sub: "alice", Email: "alice@example.test", Groups: []string{"ops"}, SID: "x", Exp: time.Now().Add(time.Hour).Unix()})
	routes := r.c.Routes()
	if len(routes) < 20 {
		t.Fatalf("only %d routes enumerated", len(routes))
	}
	for _, route := range routes {
		if open[route] {
			continue
		}
		method, pattern, _ := strings.Cut(route, " ")
		path := strings.NewReplacer("{name}", "ws", "{id}", "a.b", "{$}", "").Replace(pattern)
		for _, c := range []struct {
			name string
			set  func(*http.Request)
		}{
			{"nothing", func(*http.Request) {}},
			{"forged cookie", func(q *http.Request) { q.AddCookie(&http.Cookie{Name: sessionCookie, Value: forged}) }},
			{"wrong token", func(q *http.Request) { q.Header.Set("Authorization", "Bearer wrong") }},
		} {
			req, _ := http.NewRequest(method, r.srv.URL+path, strings.NewReader(`{"command":"id"}`))
			c.set(req)
			resp, err := browser(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(resp)
			ok := resp.StatusCode == http.StatusUnauthorized ||
				(resp.StatusCode == http.StatusFound && resp.Header.Get("Location") == "/console/login")
			if !ok || strings.Contains(body, "ran ws.Bash") || strings.Contains(body, "kiln://") {
				t.Errorf("%s with %s: %d %q", route, c.name, resp.StatusCode, body)
			}
		}
	}
	// The API token the guard holds gets in.
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/backends", nil)
	req.Header.Set("Authorization", "Bearer api-token")
	if resp, err := browser(t).Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("with the token: %v %v", resp.Status, err)
	}
}

func TestCSRF(t *testing.T) {
	r := newRig(t)
	b := browser(t)
	if code := r.login(t, b, func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n}) }, nil); code != http.StatusOK {
		t.Fatalf("login %d", code)
	}
	post := func(token string) *http.Response {
		req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/workspaces/ws/exec", strings.NewReader(`{"command":"id"}`))
		if token != "" {
			req.Header.Set(csrfHeader, token)
		}
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, tok := range []string{"", "forged"} {
		if resp := post(tok); resp.StatusCode != http.StatusForbidden || strings.Contains(readAll(resp), "ran ") {
			t.Errorf("exec with CSRF token %q: %d, want 403 and nothing run", tok, resp.StatusCode)
		}
	}
	u, _ := url.Parse(r.srv.URL)
	var s session
	for _, ck := range b.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			r.c.auth.open(ck.Value, &s)
		}
	}
	if resp := post(r.c.auth.csrf(s.SID)); resp.StatusCode != http.StatusOK || !strings.Contains(readAll(resp), "ran ws.Bash") {
		t.Errorf("exec with the session's token: %d", resp.StatusCode)
	}
}

// TestNothingFromOutsideTheRoot: tree, file and download with .., an
// absolute path and symlinks out of the root return nothing from outside.
func TestNothingFromOutsideTheRoot(t *testing.T) {
	r := newRig(t)
	get := func(path string) (int, string) {
		resp := r.api(t, context.Background(), "GET", path)
		return resp.StatusCode, readAll(resp)
	}
	for _, p := range []string{"../secret.txt", filepath.Join(filepath.Dir(r.root), "secret.txt"), "out", "updir/secret.txt", "updir", "..", "/"} {
		for _, ep := range []string{"file", "tree"} {
			code, body := get("/api/v1/workspaces/ws/" + ep + "?path=" + url.QueryEscape(p))
			if code == http.StatusOK || strings.Contains(body, "PLANTED-OUTSIDE") || strings.Contains(body, "secret.txt\"") {
				t.Errorf("%s %q: %d %q", ep, p, code, body)
			}
		}
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/workspaces/ws/download", nil)
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %v %v", resp.Status, err)
	}
	files := untar(t, resp)
	if len(files) == 0 || files["in.txt"] != "inside" {
		t.Errorf("download lacks in.txt: %v", files)
	}
	for name, content := range files {
		if strings.Contains(content, "PLANTED-OUTSIDE") || strings.Contains(name, "secret") {
			t.Errorf("download holds %s from outside the root", name)
		}
	}
	if code, body := get("/api/v1/workspaces/ws/file?path=in.txt"); code != http.StatusOK || body != "inside\n" {
		t.Errorf("file inside: %d %q", code, body)
	}
}

// TestEventsCarryNoValues: without show_values, an event's arguments
// never reach the stream.
func TestEventsCarryNoValues(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := r.api(t, ctx, "GET", "/api/v1/events")
	defer resp.Body.Close()
	for r.c.Subscribers() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.c.Publish(Event{Kind: "call", Tool: "b.t", Args: json.RawMessage(`{"password":"VALUE-NEVER-SHOWN"}`)})
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") {
			if strings.Contains(line, "VALUE-NEVER-SHOWN") || strings.Contains(line, `"args"`) {
				t.Errorf("event carries values: %s", line)
			}
			return
		}
	}
	t.Fatal("no event arrived")
}

// TestSessionWorksOnEveryReplica: a session made by one replica is
// accepted by another built from the same config (the cookie's key comes
// from the shared client secret), and refused by one with another secret.
func TestSessionWorksOnEveryReplica(t *testing.T) {
	r := newRig(t)
	b := browser(t)
	if code := r.login(t, b, func(n string) string { return r.p.token("RS256", map[string]any{"nonce": n}) }, nil); code != http.StatusOK {
		t.Fatalf("login %d", code)
	}
	u, _ := url.Parse(r.srv.URL)
	var cookie string
	for _, ck := range b.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			cookie = ck.Value
		}
	}
	for secret, want := range map[string]int{"s3cret": http.StatusOK, "another": http.StatusUnauthorized} {
		other := New(Options{Config: config.Console{Enabled: true, OIDC: &config.OIDC{Issuer: r.p.srv.URL, ClientID: "console", ClientSecret: secret},
			Allowed: []string{"group:ops"}}, Source: source{}, Caller: bash{}, Replica: "r2"})
		g, _ := httpauth.New(config.HTTP{AuthToken: "api-token"}, httpauth.Options{Addr: "127.0.0.1:1"})
		srv := httptest.NewServer(other.Handler(g.Protect, g.AuthRequired()))
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/backends", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("replica with secret %q: %d, want %d", secret, resp.StatusCode, want)
		}
		srv.Close()
		other.Close()
	}
}

// untar reads a tar.gz response into name → content.
func untar(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	defer resp.Body.Close()
	gz, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the archive is not whole: %v", err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

// TestPolicyDecidesWorkspacesAndEvents: an identity that may not use a
// workspace's Read does not see the workspace (list, tree, file,
// download) nor the calls of tools it may not use in the live log.
func TestPolicyDecidesWorkspacesAndEvents(t *testing.T) {
	deny := func(ctx context.Context, backend, tool string) bool {
		id, _ := toolcall.IdentityFrom(ctx)
		return id.Kind != config.KindToken || (backend != "ws" && tool != "secret_tool")
	}
	r := newRigWith(t, Options{Allows: deny}, true)
	get := func(path string) (int, string) {
		resp := r.api(t, context.Background(), "GET", path)
		return resp.StatusCode, readAll(resp)
	}
	if _, body := get("/api/v1/workspaces"); strings.Contains(body, `"ws"`) {
		t.Errorf("workspaces lists ws: %s", body)
	}
	for _, p := range []string{"tree", "file?path=in.txt", "download"} {
		if code, body := get("/api/v1/workspaces/ws/" + p); code != http.StatusNotFound || strings.Contains(body, "inside") {
			t.Errorf("%s for an identity denied ws.Read: %d %q", p, code, body)
		}
	}
	r.c.Publish(Event{Kind: "call", Tool: "b.secret_tool"})
	r.c.Publish(Event{Kind: "call", Tool: "b.open_tool"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := r.api(t, ctx, "GET", "/api/v1/events")
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			if strings.Contains(line, "secret_tool") {
				t.Errorf("the stream shows a call of a tool the identity may not use: %s", line)
			}
			if strings.Contains(line, "open_tool") {
				return
			}
		}
	}
	t.Fatal("the visible event never arrived")
}

// TestLoginIsAWallOnLoopback: with a login configured and no tokens at
// the front door, loopback alone does not get in.
func TestLoginIsAWallOnLoopback(t *testing.T) {
	r := newRigWith(t, Options{}, false)
	for _, c := range []struct{ method, path, auth string }{
		{"GET", "/api/v1/backends", ""}, {"GET", "/console/", "Bearer x"}, {"POST", "/api/v1/workspaces/ws/exec", ""},
	} {
		req, _ := http.NewRequest(c.method, r.srv.URL+c.path, strings.NewReader(`{"command":"id"}`))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := browser(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(resp)
		if (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusFound) || strings.Contains(body, "ran ") || strings.Contains(body, "kiln://") {
			t.Errorf("%s %s on loopback without a session: %d %q", c.method, c.path, resp.StatusCode, body)
		}
	}
}

// TestAllowedEmailMustBeVerified: allowed names a person by email only
// when the provider verified it.
func TestAllowedEmailMustBeVerified(t *testing.T) {
	r := newRig(t, "alice@example.test")
	for verified, want := range map[bool]int{false: http.StatusForbidden, true: http.StatusOK} {
		b := browser(t)
		if code := r.login(t, b, func(n string) string {
			return r.p.token("RS256", map[string]any{"nonce": n, "email_verified": verified, "groups": nil})
		}, nil); code != http.StatusOK {
			t.Fatalf("login %d", code)
		}
		resp, _ := b.Get(r.srv.URL + "/api/v1/backends")
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("email_verified %v: %d, want %d", verified, resp.StatusCode, want)
		}
	}
}

// TestFileViewRefusesFIFOs: a FIFO in the workspace is refused at once,
// not read forever.
func TestFileViewRefusesFIFOs(t *testing.T) {
	r := newRig(t)
	if err := syscall.Mkfifo(filepath.Join(r.root, "pipe"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/workspaces/ws/file?path=pipe", nil)
	req.Header.Set("Authorization", "Bearer api-token")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("the file view hung on a FIFO: %v", err)
	}
	if body := readAll(resp); resp.StatusCode == http.StatusOK || !strings.Contains(body, "not a regular file") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
}

// api sends method path to the rig with the front door's token, within ctx.
func (r *rig) api(t *testing.T, ctx context.Context, method, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, r.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Behind a TLS-terminating ingress (an https redirect_url, plain HTTP to
// kiln) the cookie that ends a session is Secure like the one that made it.
func TestLogoutCookieSecureBehindTLSIngress(t *testing.T) {
	c := New(Options{Config: config.Console{Enabled: true, OIDC: &config.OIDC{Issuer: "https://idp.example", ClientID: "console",
		ClientSecret: "s3cret", RedirectURL: "https://kiln.example/console/callback"}}, Source: source{}, Replica: "r1"})
	t.Cleanup(c.Close)
	w := httptest.NewRecorder()
	c.logout(w, httptest.NewRequest("POST", "http://kiln.internal/console/logout", nil))
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != sessionCookie || !cookies[0].Secure || cookies[0].MaxAge >= 0 {
		t.Fatalf("logout cookies %+v: want the session cookie cleared, Secure", cookies)
	}
}
