package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

const (
	sessionCookie = "kiln_console"
	loginCookie   = "kiln_console_login"
	sessionTTL    = 12 * time.Hour
	loginTTL      = 10 * time.Minute
	csrfHeader    = "X-CSRF-Token"
)

// auth is the console's OpenID Connect client and its signed cookies.
type auth struct {
	cfg     config.OIDC
	allowed []string
	key     []byte
	client  *http.Client
	now     func() time.Time
	log     *slog.Logger

	mu        sync.Mutex
	discovery *discovery
	ids       *httpauth.IDTokens
}

type discovery struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
}

// session is what the session cookie holds, signed.
type session struct {
	Sub   string `json:"sub"`
	Email string `json:"email,omitempty"`
	// Verified says the provider verified Email; only then may allowed
	// name the person by it.
	Verified bool     `json:"ev,omitempty"`
	Name     string   `json:"name,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	SID      string   `json:"sid"`
	Exp      int64    `json:"exp"`
}

// pending is what the login cookie holds between /login and /callback.
type pending struct {
	State, Nonce, Verifier string
	Exp                    int64
}

func newAuth(cfg config.OIDC, allowed []string, client *http.Client, now func() time.Time, log *slog.Logger) *auth {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	// The key is derived from the client secret, which every replica of
	// one config shares: a session made on one is good on all.
	sum := sha256.Sum256([]byte("kiln console session v1\x00" + cfg.ClientSecret))
	return &auth{cfg: cfg, allowed: allowed, key: sum[:], client: client, now: now, log: log}
}

// provider reads the issuer's discovery document once it is first needed.
func (a *auth) provider(ctx context.Context) (*discovery, *httpauth.IDTokens, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.discovery != nil {
		return a.discovery, a.ids, nil
	}
	u := strings.TrimSuffix(a.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("OpenID discovery at %s: %w", u, err)
	}
	defer resp.Body.Close()
	var d discovery
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("OpenID discovery at %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
		return nil, nil, fmt.Errorf("OpenID discovery at %s: %w", u, err)
	}
	if d.Issuer != a.cfg.Issuer || d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" || d.JWKSURI == "" {
		return nil, nil, fmt.Errorf("OpenID discovery at %s: issuer %q (want %q) or an endpoint missing", u, d.Issuer, a.cfg.Issuer)
	}
	a.discovery = &d
	a.ids = httpauth.NewIDTokens(a.cfg.Issuer, d.JWKSURI, a.cfg.ClientID, a.client, a.now, a.log)
	return a.discovery, a.ids, nil
}

// sign returns payload's JSON, base64url, a dot and its HMAC.
func (a *auth) sign(payload any) string {
	b, _ := json.Marshal(payload)
	body := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// open checks s's HMAC and decodes it into v.
func (a *auth) open(s string, v any) bool {
	body, sig, ok := strings.Cut(s, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(body))
	if !hmac.Equal(got, m.Sum(nil)) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	return err == nil && json.Unmarshal(b, v) == nil
}

// csrf is the token a state-changing request of session sid must carry.
func (a *auth) csrf(sid string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("csrf\x00" + sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionOf returns r's valid, unexpired session.
func (a *auth) sessionOf(r *http.Request) (*session, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	var s session
	if !a.open(ck.Value, &s) || s.Sub == "" || a.now().Unix() > s.Exp {
		return nil, false
	}
	return &s, true
}

// permits reports whether s is in gateway.console.allowed.
func (a *auth) permits(s *session) bool {
	for _, e := range a.allowed {
		if g, ok := strings.CutPrefix(e, "group:"); ok {
			if slices.Contains(s.Groups, g) {
				return true
			}
		} else if e == s.Sub || (s.Email != "" && s.Verified && strings.EqualFold(e, s.Email)) {
			return true
		}
	}
	return false
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secure reports whether r reached kiln over TLS, directly or through a
// proxy on this machine that says so.
func secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback() && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// secure reports whether cookies must be Secure: the request came over
// TLS, or the registered callback is https (a TLS-terminating ingress in
// front of kiln). A nil auth (no login configured) goes by the request.
func (a *auth) secure(r *http.Request) bool {
	return secure(r) || (a != nil && strings.HasPrefix(a.cfg.RedirectURL, "https://"))
}

func (a *auth) redirectURL(r *http.Request) string {
	if a.cfg.RedirectURL != "" {
		return a.cfg.RedirectURL
	}
	scheme := "http"
	if secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/console/callback"
}

// login starts the authorization code flow with PKCE.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	a := c.auth
	if a == nil {
		httpError(w, r, http.StatusNotFound, "no login here: gateway.console.oidc is not configured; send a bearer token as to /mcp")
		return
	}
	d, _, err := a.provider(r.Context())
	if err != nil {
		c.log.Warn("console login: OpenID provider unreachable", "err", err)
		httpError(w, r, http.StatusBadGateway, "the login provider cannot be reached; kiln's log has the reason")
		return
	}
	p := pending{State: random(), Nonce: random(), Verifier: random(), Exp: a.now().Add(loginTTL).Unix()}
	// Lax, not Strict: it must come back with the provider's redirect.
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: a.sign(p), Path: "/console/", HttpOnly: true,
		Secure: a.secure(r), SameSite: http.SameSiteLaxMode, MaxAge: int(loginTTL.Seconds())})
	challenge := sha256.Sum256([]byte(p.Verifier))
	q := url.Values{
		"response_type": {"code"}, "client_id": {a.cfg.ClientID}, "redirect_uri": {a.redirectURL(r)},
		"scope": {"openid email profile"}, "state": {p.State}, "nonce": {p.Nonce},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(challenge[:])}, "code_challenge_method": {"S256"},
	}
	sep := "?"
	if strings.Contains(d.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	http.Redirect(w, r, d.AuthorizationEndpoint+sep+q.Encode(), http.StatusFound)
}

// callback ends the flow: state against the login cookie, the code for
// tokens (with the PKCE verifier), the ID token verified and its nonce
// checked, then the session cookie.
func (c *Console) callback(w http.ResponseWriter, r *http.Request) {
	a := c.auth
	if a == nil {
		httpError(w, r, http.StatusNotFound, "no login here: gateway.console.oidc is not configured")
		return
	}
	refuse := func(why string) {
		c.log.Info("console login refused", "reason", why, "remote", r.RemoteAddr)
		httpError(w, r, http.StatusForbidden, "login refused: "+why+". Start again at /console/login.")
	}
	ck, err := r.Cookie(loginCookie)
	var p pending
	if err != nil || !a.open(ck.Value, &p) || a.now().Unix() > p.Exp {
		refuse("no login in progress in this browser, or it expired")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/console/", MaxAge: -1, HttpOnly: true, Secure: a.secure(r), SameSite: http.SameSiteLaxMode})
	if e := r.URL.Query().Get("error"); e != "" {
		refuse("the provider answered " + e)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(p.State)) != 1 {
		refuse("state does not match")
		return
	}
	d, ids, err := a.provider(r.Context())
	if err != nil {
		c.log.Warn("console login: OpenID provider unreachable", "err", err)
		httpError(w, r, http.StatusBadGateway, "the login provider cannot be reached; kiln's log has the reason. Start again at /console/login.")
		return
	}
	idToken, err := a.exchange(r.Context(), d, r.URL.Query().Get("code"), p.Verifier, a.redirectURL(r))
	if err != nil {
		c.log.Warn("console login: code exchange failed", "err", err)
		httpError(w, r, http.StatusBadGateway, "the login provider did not exchange the code: "+err.Error()+". Start again at /console/login.")
		return
	}
	sub, claims, err := ids.Verify(r.Context(), idToken)
	if err != nil {
		refuse("the ID token is not valid: " + err.Error())
		return
	}
	if n, _ := claims["nonce"].(string); subtle.ConstantTimeCompare([]byte(n), []byte(p.Nonce)) != 1 {
		refuse("nonce does not match")
		return
	}
	s := session{Sub: sub, SID: random(), Exp: a.now().Add(sessionTTL).Unix()}
	s.Email, _ = claims["email"].(string)
	s.Verified, _ = claims["email_verified"].(bool)
	s.Name, _ = claims["name"].(string)
	var groups []string
	switch g := claims["groups"].(type) {
	case []any:
		for _, v := range g {
			if str, ok := v.(string); ok {
				groups = append(groups, str)
			}
		}
	case string:
		groups = strings.Fields(g)
	}
	// Only the groups allowed names go in the cookie: a provider's long
	// group list would push it past what a browser keeps.
	for _, g := range groups {
		if slices.Contains(a.allowed, "group:"+g) {
			s.Groups = append(s.Groups, g)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: a.sign(s), Path: "/", HttpOnly: true,
		Secure: a.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())})
	// A page of kiln's own moves on, so the Strict cookie goes with the
	// next request (a redirect from the provider's chain would not carry it).
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><meta http-equiv="refresh" content="0;url=/console/"><title>kiln</title><p>Logged in. <a href="/console/">Continue to the console</a>.`)
}

// exchange trades code for the token response's id_token.
func (a *auth) exchange(ctx context.Context, d *discovery, code, verifier, redirect string) (string, error) {
	if code == "" {
		return "", errors.New("no code")
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {a.cfg.ClientID}, "code_verifier": {verifier}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(a.cfg.ClientID), url.QueryEscape(a.cfg.ClientSecret))
	resp, err := a.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var tr struct {
		IDToken string `json:"id_token"`
		Error   string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tr); err != nil {
		return "", fmt.Errorf("token endpoint: %s", resp.Status)
	}
	if resp.StatusCode != http.StatusOK || tr.IDToken == "" {
		return "", fmt.Errorf("token endpoint: %s %s", resp.Status, tr.Error)
	}
	return tr.IDToken, nil
}

// logout ends the browser session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.auth.secure(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

type viewerKey struct{}

// viewer is who is looking, for the pages: their name and the CSRF token
// their forms carry ("" for bearer clients, which need none).
type viewer struct {
	Name, CSRF string
	Session    bool
}

func viewerFrom(ctx context.Context) viewer {
	v, _ := ctx.Value(viewerKey{}).(viewer)
	return v
}

// authenticated serves h to a browser session that is allowed (with a
// CSRF check on state-changing methods) and passes everything else to
// guard, the front door's own checks.
func (c *Console) authenticated(guard func(http.Handler) http.Handler, h http.HandlerFunc) http.Handler {
	guarded := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := toolcall.IdentityFrom(r.Context())
		name := id.String()
		h(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, viewer{Name: name})))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := c.auth
		if a == nil {
			guarded.ServeHTTP(w, r)
			return
		}
		s, ok := a.sessionOf(r)
		if !ok {
			if (r.Header.Get("Authorization") == "" || !c.tokens) && strings.HasPrefix(r.URL.Path, "/console/") && r.Method == http.MethodGet {
				http.Redirect(w, r, "/console/login", http.StatusFound)
				return
			}
			if !c.tokens {
				// No tokens at the front door: its loopback rule would let
				// anyone on this machine past the login configured here.
				httpError(w, r, http.StatusUnauthorized, "log in at /console/login first")
				return
			}
			guarded.ServeHTTP(w, r)
			return
		}
		who := s.Sub
		if s.Email != "" {
			who = s.Email
		}
		if !a.permits(s) {
			c.page(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, viewer{Name: who, Session: true})), http.StatusForbidden, "forbidden", map[string]any{"Who": who})
			return
		}
		token := a.csrf(s.SID)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get(csrfHeader)
			if got == "" {
				got = r.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				httpError(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
				return
			}
		}
		claims := map[string]any{"email": s.Email}
		if len(s.Groups) > 0 {
			groups := make([]any, len(s.Groups))
			for i, g := range s.Groups {
				groups[i] = g
			}
			claims["groups"] = groups
		}
		ctx := toolcall.WithIdentity(r.Context(), toolcall.Identity{Kind: config.KindOIDC, Subject: s.Sub, Claims: claims})
		ctx = context.WithValue(ctx, viewerKey{}, viewer{Name: who, CSRF: token, Session: true})
		h(w, r.WithContext(ctx))
	})
}

// httpError answers JSON to the API and plain text elsewhere.
func httpError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}
