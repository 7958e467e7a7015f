package httpauth

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// IDTokens verifies OpenID Connect ID tokens from one issuer for one
// client: the same checks as the front door's access tokens (RS256 or
// ES256 only, so "none" and HMAC are refused before any key is read;
// signature against the issuer's JWKS; iss; aud; exp and nbf), with the
// client ID as the audience. The caller checks the nonce claim.
type IDTokens struct{ v *jwtVerifier }

// NewIDTokens verifies tokens of issuer, signed by a key of jwksURL, for
// clientID; client nil means a 10s-timeout client, now nil time.Now.
func NewIDTokens(issuer, jwksURL, clientID string, client *http.Client, now func() time.Time, log *slog.Logger) *IDTokens {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ks := &keySet{url: jwksURL, client: client, now: now, log: log}
	return &IDTokens{v: &jwtVerifier{issuer: issuer, audience: clientID, keys: ks, now: now}}
}

// Verify returns the token's subject and claims, or why it is refused.
func (t *IDTokens) Verify(ctx context.Context, token string) (string, map[string]any, error) {
	return t.v.verify(ctx, token, []string{t.v.audience})
}
