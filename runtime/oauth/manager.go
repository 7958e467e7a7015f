package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/kilnmcp/kiln/runtime/config"
)

// ErrNeedsLogin means the backend's token is missing or expired and can no
// longer be refreshed: a person must run `kiln auth login NAME`.
var ErrNeedsLogin = errors.New("needs_login")

// NeedsLoginError says which backend needs a login and the exact command.
type NeedsLoginError struct {
	Backend string
	Reason  string
	// Scopes, when set, are what the login must ask for: the scopes the
	// stored token has plus those a step-up challenge named.
	Scopes []string
}

func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("backend %q needs_login: %s; run: %s", e.Backend, e.Reason, e.NeedsLogin())
}

// Is makes errors.Is(err, ErrNeedsLogin) hold.
func (e *NeedsLoginError) Is(target error) bool { return target == ErrNeedsLogin }

// Callback is what the authorization server sent to the redirect URI.
type Callback struct{ Code, State, Iss string }

// CallbackFromQuery reads a redirect's query, turning an OAuth error
// response into an error.
func CallbackFromQuery(q url.Values) (Callback, error) {
	if e := q.Get("error"); e != "" {
		return Callback{}, fmt.Errorf("authorization server refused: %s %s", e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		return Callback{}, errors.New("authorization redirect carries no code")
	}
	return Callback{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// AuthorizeFunc shows authURL to a person (or a test's approving agent)
// and returns what arrives at the redirect URI.
type AuthorizeFunc func(ctx context.Context, authURL string) (Callback, error)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Dir holds the token store (state_dir/oauth) unless Store is set.
	Dir string
	// Store, when set, keeps the tokens instead of Dir (a fleet's
	// SharedStore).
	Store TokenStore
	// Authorize runs the interactive part of the authorization code
	// grant. Nil (kiln serve, kiln-gen record) turns the need for one into
	// a NeedsLoginError.
	Authorize AuthorizeFunc
	// RedirectURL overrides the backend's auth.redirect_url (kiln auth
	// login sets the loopback address it listens on).
	RedirectURL string
	// Scopes are asked for on top of the backend's configured or
	// discovered ones (kiln auth login --scope, as a step-up's
	// needs_login command says).
	Scopes []string
	// OnSecret receives every token and secret the manager learns, for
	// the output scrubber.
	OnSecret func(...string)
	// Base is the transport under the bearer layer (default
	// http.DefaultTransport).
	Base   http.RoundTripper
	Logger *slog.Logger
}

// Manager hands out authenticated HTTP clients and owns the token store.
type Manager struct {
	opts  ManagerOptions
	store TokenStore
	// busy is read-held by every refresh until its new token is saved;
	// Close takes it to wait for them. A rotating refresh token spent by
	// a refresh whose result never reached the store is lost for good.
	busy   sync.RWMutex
	closed bool
}

// Close waits for refreshes in flight to be stored and refuses new ones.
// Call it before the process exits (kiln serve, record, auth login).
func (m *Manager) Close() {
	m.busy.Lock()
	m.closed = true
	m.busy.Unlock()
}

// NewManager returns a manager over opts.Store, else the store in opts.Dir.
func NewManager(opts ManagerOptions) *Manager {
	if opts.Base == nil {
		opts.Base = http.DefaultTransport
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnSecret == nil {
		opts.OnSecret = func(...string) {}
	}
	store := opts.Store
	if store == nil {
		store = NewStore(opts.Dir)
	}
	return &Manager{opts: opts, store: store}
}

// Store returns the manager's token store.
func (m *Manager) Store() TokenStore { return m.store }

// HTTPClient returns the client an HTTP or SSE backend with auth: sends
// its requests through. A backend without auth gets nil (the SDK's
// default client).
func (m *Manager) HTTPClient(cfg *config.Backend) (*http.Client, error) {
	if cfg.Auth == nil {
		return nil, nil
	}
	h, err := m.handler(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend %q: auth: %w", cfg.Name, err)
	}
	if m.opts.Authorize == nil && cfg.Auth.Grant != config.GrantClientCredentials {
		// Headless: a challenge can only end in needs_login, so do not
		// discover or register a client with the server on every retry.
		h = headless{handler: h, name: cfg.Name, store: m.store}
	}
	return &http.Client{Transport: &bearer{name: cfg.Name, h: h, base: m.opts.Base}}, nil
}

// headless is the authorization code handler of kiln serve and kiln-gen
// record: it serves stored (and refreshed) tokens, and answers a challenge
// with the login command instead of a flow nobody can complete.
type headless struct {
	handler
	name  string
	store TokenStore
}

func (h headless) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	src, _ := h.TokenSource(ctx)
	if src == nil {
		return &NeedsLoginError{Backend: h.name, Reason: "kiln has no token for it yet"}
	}
	// A login since the token was read (kiln auth login --scope, run
	// while this process serves) left a new token in the store: try it
	// before asking for another login.
	if s, ok := src.(*storedSourceT); ok && s.reload() {
		return nil
	}
	if !insufficientScope(resp) {
		return &NeedsLoginError{Backend: h.name, Reason: "the backend refused the stored token"}
	}
	// Step-up: the login must ask for what the token has and what the
	// challenge names, or the next call would need the old scopes back.
	var had []string
	if r, err := h.store.Load(h.name); err == nil && r != nil {
		had = r.Scopes
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	want := challengeScopes(challenges)
	return &NeedsLoginError{Backend: h.name, Scopes: union(had, want),
		Reason: fmt.Sprintf("the backend asks for more scope (%s) than the stored token has", strings.Join(want, " "))}
}

// handler is the go-sdk's OAuthHandler contract: a token source for every
// request and Authorize after a 401 or 403.
type handler interface {
	TokenSource(context.Context) (oauth2.TokenSource, error)
	Authorize(context.Context, *http.Request, *http.Response) error
}

func (m *Manager) handler(cfg *config.Backend) (handler, error) {
	a := cfg.Auth
	plain := &http.Client{Transport: m.opts.Base}
	rec, err := m.store.Load(cfg.Name)
	if err != nil {
		return nil, err
	}
	if a.Grant == config.GrantClientCredentials {
		cc := &clientCredentials{m: m, name: cfg.Name, auth: a, client: plain}
		if rec != nil && rec.Grant == config.GrantClientCredentials {
			cc.src = m.storedSource(cfg.Name, rec)
		}
		return cc, nil
	}
	redirect := a.RedirectURL
	if m.opts.RedirectURL != "" {
		redirect = m.opts.RedirectURL
	}
	if redirect == "" {
		redirect = "http://127.0.0.1/callback"
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		Client:              plain,
		RequestRefreshToken: true,
		ScopeFilter: func(found []string) []string {
			if len(a.Scopes) > 0 {
				found = a.Scopes
			}
			return union(found, m.opts.Scopes)
		},
		AuthorizationCodeFetcher: m.fetcher(cfg.Name),
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			r := &Record{Grant: config.GrantAuthorizationCode, TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle),
				ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, Scopes: oc.Scopes, Token: tok}
			if err := m.save(cfg.Name, r); err != nil {
				return nil, err
			}
			return m.storedSource(cfg.Name, r), nil
		},
	}
	if rec != nil && rec.Grant == config.GrantAuthorizationCode {
		hc.InitialTokenSource = m.storedSource(cfg.Name, rec)
	}
	switch {
	case a.ClientID != "":
		ca := &oauthex.ClientCredentials{ClientID: a.ClientID}
		if a.ClientSecret != "" {
			ca.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.ClientSecret}
		}
		hc.PreregisteredClient = ca
	default:
		if a.ClientMetadataURL != "" {
			hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: a.ClientMetadataURL}
		}
		hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:   "kiln",
			RedirectURIs: []string{redirect},
			GrantTypes:   []string{"authorization_code", "refresh_token"},
		}}
	}
	return auth.NewAuthorizationCodeHandler(hc)
}

func (m *Manager) fetcher(name string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if m.opts.Authorize == nil {
			return nil, &NeedsLoginError{Backend: name, Reason: "the backend asks for authorization and kiln has no valid token for it"}
		}
		cb, err := m.opts.Authorize(ctx, args.URL)
		if err != nil {
			return nil, err
		}
		return &auth.AuthorizationResult{Code: cb.Code, State: cb.State, Iss: cb.Iss}, nil
	}
}

func (m *Manager) save(name string, r *Record) error {
	m.learn(r)
	return m.store.Update(name, func(*Record) (*Record, error) { return r, nil })
}

func (m *Manager) learn(r *Record) {
	if r == nil {
		return
	}
	var s []string
	if r.Token != nil {
		s = append(s, r.Token.AccessToken, r.Token.RefreshToken)
	}
	m.opts.OnSecret(append(s, r.ClientSecret)...)
}

// storedSource serves the stored token and refreshes it under the store's
// lock, re-reading the file first: another kiln process may have refreshed
// already, and a rotating refresh token must be spent only once.
type storedSourceT struct {
	m    *Manager
	name string
	mu   sync.Mutex
	cur  *oauth2.Token
}

func (m *Manager) storedSource(name string, r *Record) oauth2.TokenSource {
	m.learn(r)
	return &storedSourceT{m: m, name: name, cur: r.Token}
}

// reload picks up a token another process stored since this one read it,
// reporting whether it changed.
func (s *storedSourceT) reload() bool {
	r, err := s.m.store.Load(s.name)
	if err != nil || r == nil || r.Token == nil || r.Grant != config.GrantAuthorizationCode {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && r.Token.AccessToken == s.cur.AccessToken {
		return false
	}
	s.m.learn(r)
	s.cur = r.Token
	return true
}

func (s *storedSourceT) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Valid() {
		return s.cur, nil
	}
	s.m.busy.RLock()
	defer s.m.busy.RUnlock()
	if s.m.closed {
		return nil, errors.New("token store closed: kiln is shutting down")
	}
	err := s.m.store.Update(s.name, func(r *Record) (*Record, error) {
		if r == nil || r.Token == nil {
			return nil, &NeedsLoginError{Backend: s.name, Reason: "no stored token (logged out)"}
		}
		if r.Token.Valid() {
			s.cur = r.Token
			return r, nil
		}
		tok, err := s.m.refresh(r)
		if err != nil {
			return r, err
		}
		r.Token = tok
		s.cur = tok
		s.m.learn(r)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return s.cur, nil
}

// refresh renews r's token: a refresh grant for authorization code
// tokens, a new client credentials grant for those.
func (m *Manager) refresh(r *Record) (*oauth2.Token, error) {
	// Bounded well under the fleet lock's lease (sharedLease), so the new
	// token is stored while this replica still holds the lock.
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: m.opts.Base})
	if r.Grant == config.GrantClientCredentials {
		return nil, &NeedsLoginError{Backend: r.Backend, Reason: "client credentials token expired"}
	}
	if r.Token.RefreshToken == "" {
		return nil, &NeedsLoginError{Backend: r.Backend, Reason: "the access token expired and the server issued no refresh token"}
	}
	oc := &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: r.TokenURL, AuthStyle: oauth2.AuthStyle(r.AuthStyle)}}
	tok, err := oc.TokenSource(ctx, &oauth2.Token{RefreshToken: r.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.Response.StatusCode == http.StatusBadRequest || re.Response.StatusCode == http.StatusUnauthorized) {
			return nil, &NeedsLoginError{Backend: r.Backend, Reason: "the refresh token was refused (" + re.ErrorCode + ")"}
		}
		return nil, fmt.Errorf("refresh token: %w", err)
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = r.Token.RefreshToken
	}
	return tok, nil
}

// NeedsLogin returns the command that fixes the error; runtime/dispatch
// looks for this method to show the backend's state as needs_login.
func (e *NeedsLoginError) NeedsLogin() string {
	cmd := "kiln auth login " + e.Backend
	if len(e.Scopes) > 0 {
		cmd += " --scope " + shellQuote(strings.Join(e.Scopes, " "))
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell unless it needs none, so the
// command can be pasted as shown.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
