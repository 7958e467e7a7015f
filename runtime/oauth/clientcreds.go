package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/kilnmcp/kiln/runtime/config"
)

// clientCredentials is the unattended grant (OAuth 2.1 §4.2, SEP-1046):
// the client authenticates itself with a secret (basic or post) or a
// signed JWT assertion (RFC 7523 private_key_jwt) and gets a token for
// the resource (RFC 8707) with no person involved. It re-runs the grant
// whenever the token expires or the server challenges again.
type clientCredentials struct {
	m      *Manager
	name   string
	auth   *config.Auth
	client *http.Client

	mu     sync.Mutex
	src    oauth2.TokenSource
	scopes []string // granted so far; step-up asks for their union
}

func (c *clientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.src, nil
}

func (c *clientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("parse WWW-Authenticate: %w", err)
	}
	resource := req.URL.String()
	prm, err := discoverResource(ctx, challenges, resource, c.client)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c.client)
	if err != nil {
		return fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil || asm.TokenEndpoint == "" {
		return fmt.Errorf("authorization server %s publishes no token endpoint", prm.AuthorizationServers[0])
	}
	// The configured scopes, plus what a challenge names: a step-up 403
	// asks for a scope the configuration may not list.
	scopes, challenged := c.auth.Scopes, challengeScopes(challenges)
	if len(scopes) == 0 && len(challenged) == 0 {
		scopes = prm.ScopesSupported
	}
	c.mu.Lock()
	scopes = union(union(c.scopes, scopes), challenged)
	c.mu.Unlock()
	tok, err := c.request(ctx, asm, prm.Resource, scopes)
	if err != nil {
		return err
	}
	r := &Record{Grant: config.GrantClientCredentials, Issuer: asm.Issuer, TokenURL: asm.TokenEndpoint, ClientID: c.auth.ClientID, Scopes: scopes, Token: tok}
	if err := c.m.store.Update(c.name, func(*Record) (*Record, error) { return r, nil }); err != nil {
		return err
	}
	c.m.learn(r)
	c.mu.Lock()
	c.scopes = scopes
	c.src = &ccSource{c: c, asm: asm, resource: prm.Resource, scopes: scopes, cur: tok}
	c.mu.Unlock()
	return nil
}

// ccSource re-runs the grant when the token expires: there is no refresh
// token in the client credentials grant.
type ccSource struct {
	c        *clientCredentials
	asm      *oauthex.AuthServerMeta
	resource string
	scopes   []string
	mu       sync.Mutex
	cur      *oauth2.Token
}

func (s *ccSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Valid() {
		return s.cur, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := s.c.request(ctx, s.asm, s.resource, s.scopes)
	if err != nil {
		return nil, err
	}
	s.cur = tok
	s.c.m.learn(&Record{Token: tok})
	return tok, nil
}

func (c *clientCredentials) request(ctx context.Context, asm *oauthex.AuthServerMeta, resource string, scopes []string) (*oauth2.Token, error) {
	a := c.auth
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	method := a.TokenEndpointAuth
	if method == "" {
		method = pickAuthMethod(asm.TokenEndpointAuthMethodsSupported, a)
	}
	var basic bool
	switch method {
	case "client_secret_basic":
		basic = true
	case "client_secret_post":
		form.Set("client_id", a.ClientID)
		form.Set("client_secret", a.ClientSecret)
	case "private_key_jwt":
		assertion, err := clientAssertion(a, asm.Issuer, time.Now())
		if err != nil {
			return nil, err
		}
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	case "none":
		form.Set("client_id", a.ClientID)
	default:
		return nil, fmt.Errorf("token_endpoint_auth %q is not one of client_secret_basic, client_secret_post, private_key_jwt, none", method)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(a.ClientID), url.QueryEscape(a.ClientSecret))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Scope       string `json:"scope"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return nil, fmt.Errorf("token endpoint answered %s with a body that is not JSON", resp.Status)
	}
	if resp.StatusCode != http.StatusOK || tr.AccessToken == "" {
		return nil, fmt.Errorf("token endpoint refused the client credentials grant (%s): %s %s", resp.Status, tr.Error, tr.Description)
	}
	tok := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType}
	if tr.ExpiresIn > 0 {
		tok.Expiry = time.Now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	return tok, nil
}

// pickAuthMethod follows the server's list when the config names none:
// a key means private_key_jwt; a secret prefers basic (OAuth 2.1's
// default) over post.
func pickAuthMethod(supported []string, a *config.Auth) string {
	if a.PrivateKey != "" {
		return "private_key_jwt"
	}
	if a.ClientSecret == "" {
		return "none"
	}
	if len(supported) > 0 && !slices.Contains(supported, "client_secret_basic") && slices.Contains(supported, "client_secret_post") {
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// discoverResource finds the protected resource metadata (RFC 9728): the
// challenge's resource_metadata first, then the well-known paths at the
// endpoint's path and at the root.
func discoverResource(ctx context.Context, challenges []oauthex.Challenge, resource string, c *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	u, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("backend URL: %w", err)
	}
	type try struct{ meta, res string }
	var tries []try
	for _, ch := range challenges {
		if strings.EqualFold(ch.Scheme, "bearer") && ch.Params["resource_metadata"] != "" {
			tries = append(tries, try{ch.Params["resource_metadata"], resource})
		}
	}
	root := *u
	root.Path, root.RawQuery = "", ""
	tries = append(tries,
		try{root.String() + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/"), resource},
		try{root.String() + "/.well-known/oauth-protected-resource", root.String()})
	var errs []error
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.meta, t.res, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	return nil, fmt.Errorf("no protected resource metadata names an authorization server for %s: %w", resource, errors.Join(errs...))
}

func challengeScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
