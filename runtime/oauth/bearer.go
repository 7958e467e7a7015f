package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// bearer is the RoundTripper of an authenticated backend. Like the go-sdk's
// streamable client transport it authorizes at most once per request: a
// second 401/403 after a fresh authorization goes back to the caller, so a
// server that never accepts a token cannot loop kiln (auth/scope-retry-limit).
type bearer struct {
	name string
	h    handler
	base http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.send(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
		return resp, nil
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // cannot replay; let the caller see the refusal
	}
	if err := b.h.Authorize(req.Context(), req, resp); err != nil {
		var nl *NeedsLoginError
		if errors.As(err, &nl) {
			return nil, nl
		}
		return nil, fmt.Errorf("backend %q: authorization: %w", b.name, err)
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return b.send(retry)
}

func (b *bearer) send(req *http.Request) (*http.Response, error) {
	src, err := b.h.TokenSource(req.Context())
	if err != nil {
		return nil, err
	}
	if src != nil {
		tok, err := src.Token()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return b.base.RoundTrip(req)
}

// insufficientScope reports a 403 that asks for more scope (step-up), the
// only 403 a new authorization can fix.
func insufficientScope(resp *http.Response) bool {
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if strings.Contains(strings.ToLower(v), "insufficient_scope") {
			return true
		}
	}
	return false
}
