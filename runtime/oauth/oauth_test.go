package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/kilnmcp/kiln/runtime/config"
)

// TestStoreUpdatesSerialize runs read-modify-write cycles from many
// goroutines, each through its own Store (its own lock file descriptor,
// as two processes would have): no increment may be lost.
func TestStoreUpdatesSerialize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewStore(dir)
			for range each {
				err := s.Update("b", func(r *Record) (*Record, error) {
					n := 0
					if r != nil {
						n, _ = strconv.Atoi(r.Token.AccessToken)
					}
					return &Record{Token: &oauth2.Token{AccessToken: strconv.Itoa(n + 1)}}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r, err := NewStore(dir).Load("b")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Token.AccessToken; got != strconv.Itoa(workers*each) {
		t.Errorf("counter = %s, want %d: an update was lost", got, workers*each)
	}
	fi, err := os.Stat(filepath.Join(dir, "b.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("store folder mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestStoreRejectsPathNames(t *testing.T) {
	for _, name := range []string{"../x", "a/b", "", ".hidden"} {
		if _, err := NewStore(t.TempDir()).Load(name); err == nil {
			t.Errorf("Load(%q): no error", name)
		}
	}
}

// TestDiscoverResource finds protected-resource metadata (RFC 9728) served
// by the go-sdk's handler: through the challenge's resource_metadata, and
// without it at the well-known path of the endpoint.
func TestDiscoverResource(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	meta := &oauthex.ProtectedResourceMetadata{Resource: srv.URL + "/mcp", AuthorizationServers: []string{"https://as.example"}, ScopesSupported: []string{"read"}}
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(meta))
	mux.Handle("/custom-prm", auth.ProtectedResourceMetadataHandler(meta))
	tests := []struct {
		name       string
		challenges []oauthex.Challenge
	}{
		{"well-known path", nil},
		{"challenge", []oauthex.Challenge{{Scheme: "bearer", Params: map[string]string{"resource_metadata": srv.URL + "/custom-prm"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prm, err := discoverResource(t.Context(), tc.challenges, srv.URL+"/mcp", srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			if prm.AuthorizationServers[0] != "https://as.example" || prm.Resource != srv.URL+"/mcp" {
				t.Errorf("prm = %+v", prm)
			}
		})
	}
	if _, err := discoverResource(t.Context(), nil, srv.URL+"/other", srv.Client()); err == nil || !strings.Contains(err.Error(), "no protected resource metadata") {
		t.Errorf("resource without metadata: err = %v", err)
	}
}

// TestClientAssertion checks the private_key_jwt assertion (RFC 7523)
// verifies with the public key and carries the claims servers check.
func TestClientAssertion(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	a := &config.Auth{ClientID: "kiln-client", PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
	now := time.Unix(1_800_000_000, 0)
	jwt, err := clientAssertion(a, "https://as.example", now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q is not a JWS compact serialization", jwt)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(&key.PublicKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("ES256 signature does not verify")
	}
	var header map[string]string
	var claims map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(hb, &header)
	_ = json.Unmarshal(cb, &claims)
	if header["alg"] != "ES256" || claims["iss"] != "kiln-client" || claims["sub"] != "kiln-client" || claims["aud"] != "https://as.example" ||
		claims["exp"].(float64) != float64(now.Add(5*time.Minute).Unix()) || claims["jti"] == "" {
		t.Errorf("header %v claims %v", header, claims)
	}
	a.SigningAlg = "RS256"
	if _, err := clientAssertion(a, "x", now); err == nil {
		t.Error("RS256 with an EC key: no error")
	}
}

// countingHandler is a test double for the OAuth handler: the test is
// about how often the transport asks it, not about a flow.
type countingHandler struct{ authorizes int }

func (h *countingHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"}), nil
}

func (h *countingHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	h.authorizes++
	resp.Body.Close()
	return nil
}

// TestBearerAuthorizesOncePerRequest: a server that refuses every token
// gets one authorization and one retry per request, not a loop; a plain
// 403 (not insufficient_scope) gets none.
func TestBearerAuthorizesOncePerRequest(t *testing.T) {
	var requests int
	status, challenge := http.StatusUnauthorized, `Bearer error="invalid_token"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if got := r.Header.Get("Authorization"); got != "Bearer t" {
			t.Errorf("Authorization = %q", got)
		}
		if body, _ := io.ReadAll(r.Body); string(body) != "payload" {
			t.Errorf("body = %q; a retry must resend it", body)
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	h := &countingHandler{}
	c := &http.Client{Transport: &bearer{name: "b", h: h, base: http.DefaultTransport}}
	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || h.authorizes != 1 || requests != 2 {
		t.Errorf("401 loop: status %d, %d authorizations, %d requests; want 401, 1, 2", resp.StatusCode, h.authorizes, requests)
	}
	status, challenge, requests, h.authorizes = http.StatusForbidden, `Bearer error="access_denied"`, 0, 0
	resp, err = c.Post(srv.URL, "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h.authorizes != 0 || requests != 1 {
		t.Errorf("plain 403: %d authorizations, %d requests; want 0, 1", h.authorizes, requests)
	}
}

// TestExpiredWithoutRefreshNeedsLogin: a stored token that expired with no
// refresh token is a NeedsLoginError naming the command, not a retry.
func TestExpiredWithoutRefreshNeedsLogin(t *testing.T) {
	m := NewManager(ManagerOptions{Dir: t.TempDir()})
	rec := &Record{Grant: config.GrantAuthorizationCode, TokenURL: "http://127.0.0.1:1/token",
		Token: &oauth2.Token{AccessToken: "old", Expiry: time.Unix(1, 0)}}
	if err := m.save("gh", rec); err != nil {
		t.Fatal(err)
	}
	_, err := m.storedSource("gh", rec).Token()
	var nl *NeedsLoginError
	if !errors.As(err, &nl) || !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), "run: kiln auth login gh") {
		t.Errorf("err = %v; want a NeedsLoginError naming kiln auth login gh", err)
	}
}

// TestSecretsReachScrubber: every token the manager holds is handed to
// OnSecret.
func TestSecretsReachScrubber(t *testing.T) {
	var got []string
	m := NewManager(ManagerOptions{Dir: t.TempDir(), OnSecret: func(s ...string) { got = append(got, s...) }})
	if err := m.save("gh", &Record{ClientSecret: "cs", Token: &oauth2.Token{AccessToken: "at", RefreshToken: "rt"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at", "rt", "cs"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("OnSecret never got %q (got %v)", want, got)
		}
	}
}

// TestHeadlessNeedsLoginWithoutFlow: kiln serve (no Authorize) answers a
// challenge with needs_login and never contacts the metadata endpoints.
func TestHeadlessNeedsLoginWithoutFlow(t *testing.T) {
	var metadata int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			metadata++
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	m := NewManager(ManagerOptions{Dir: t.TempDir()})
	c, err := m.HTTPClient(&config.Backend{Name: "gh", URL: srv.URL + "/mcp", Auth: &config.Auth{ClientID: "x", Grant: config.GrantAuthorizationCode}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Post(srv.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), "no token for it yet; run: kiln auth login gh") {
		t.Errorf("err = %v; want needs_login with the command", err)
	}
	if metadata != 0 {
		t.Errorf("%d metadata requests from a headless kiln; want none", metadata)
	}
}

// TestCloseRefusesRefresh: after Close no refresh starts, so none can be
// cut off by the process exiting with its rotated token unsaved.
func TestCloseRefusesRefresh(t *testing.T) {
	m := NewManager(ManagerOptions{Dir: t.TempDir()})
	rec := &Record{Grant: config.GrantAuthorizationCode, TokenURL: "http://127.0.0.1:1/token",
		Token: &oauth2.Token{AccessToken: "old", RefreshToken: "r", Expiry: time.Unix(1, 0)}}
	src := m.storedSource("gh", rec)
	m.Close()
	if _, err := src.Token(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("refresh after Close: err = %v", err)
	}
}

// TestNeedsLoginCommand: the command in a needs_login error can be pasted
// into a shell as shown, with the step-up scopes quoted when needed.
func TestNeedsLoginCommand(t *testing.T) {
	for _, tc := range []struct {
		scopes []string
		want   string
	}{
		{nil, "kiln auth login gh"},
		{[]string{"repo"}, "kiln auth login gh --scope repo"},
		{[]string{"read", "admin"}, "kiln auth login gh --scope 'read admin'"},
		{[]string{"https://x.example/a"}, "kiln auth login gh --scope https://x.example/a"},
		{[]string{"it's"}, `kiln auth login gh --scope 'it'\''s'`},
	} {
		e := &NeedsLoginError{Backend: "gh", Reason: "r", Scopes: tc.scopes}
		if got := e.NeedsLogin(); got != tc.want {
			t.Errorf("NeedsLogin(%q) = %q; want %q", tc.scopes, got, tc.want)
		}
		if !strings.HasSuffix(e.Error(), "; run: "+tc.want) {
			t.Errorf("Error() = %q; want it to end with the command", e.Error())
		}
	}
}

// TestHeadlessStepUp: a serving kiln whose token lacks a scope answers the
// 403 with needs_login naming the union of the stored and challenged
// scopes; once another process (kiln auth login --scope) stores a new
// token, the same client retries with it instead of asking again. The
// server is a stand-in for a resource server's scope check; the e2e test
// TestOAuthStepUpInteractive runs the real one.
func TestHeadlessStepUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer wide" {
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin"`)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	m := NewManager(ManagerOptions{Dir: t.TempDir()})
	long := time.Now().Add(time.Hour)
	if err := m.save("gh", &Record{Grant: config.GrantAuthorizationCode, Scopes: []string{"read"},
		Token: &oauth2.Token{AccessToken: "narrow", Expiry: long}}); err != nil {
		t.Fatal(err)
	}
	c, err := m.HTTPClient(&config.Backend{Name: "gh", URL: srv.URL, Auth: &config.Auth{ClientID: "x", Grant: config.GrantAuthorizationCode}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	var nl *NeedsLoginError
	if !errors.As(err, &nl) || nl.NeedsLogin() != "kiln auth login gh --scope 'read admin'" {
		t.Fatalf("err = %v; want needs_login with kiln auth login gh --scope 'read admin'", err)
	}
	if err := m.save("gh", &Record{Grant: config.GrantAuthorizationCode, Scopes: []string{"read", "admin"},
		Token: &oauth2.Token{AccessToken: "wide", Expiry: long}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the new login: %v %v; want 200 with the stored token", resp, err)
	}
	resp.Body.Close()
}
