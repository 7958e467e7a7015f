package httpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// leeway absorbs clock skew between kiln and the issuer on exp and nbf.
const leeway = 60 * time.Second

// Reasons a JWT is refused. They go to the debug log only: the client sees
// the same 401 for all of them.
var (
	errMalformed  = errors.New("malformed token")
	errAlg        = errors.New("unsupported alg")
	errSignature  = errors.New("bad signature")
	errUnknownKey = errors.New("no JWKS key for kid")
	errIssuer     = errors.New("wrong issuer")
	errAudience   = errors.New("wrong audience")
	errExpired    = errors.New("expired")
	errNotYet     = errors.New("not yet valid")
)

// jwtVerifier checks access tokens issued by one authorization server.
type jwtVerifier struct {
	issuer   string
	audience string // configured audience; empty means the resource URL
	keys     *keySet
	now      func() time.Time
}

// token is a JWS in compact serialization, decoded but not yet verified.
type token struct {
	header struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Crit json.RawMessage `json:"crit"`
	}
	claims struct {
		Iss string   `json:"iss"`
		Sub string   `json:"sub"`
		Aud audience `json:"aud"`
		Exp *float64 `json:"exp"`
		Nbf *float64 `json:"nbf"`
	}
	// all is every claim of the payload, for the identity policies match
	// (groups, scope, ...).
	all    map[string]any
	signed []byte // header.payload, the signing input
	sig    []byte
}

// audience is the aud claim, a string or an array of strings (RFC 7519
// section 4.1.3).
type audience []string

// UnmarshalJSON accepts both forms of aud.
func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("aud: %w", err)
	}
	*a = many
	return nil
}

var b64 = base64.RawURLEncoding.Strict()

// parseJWT decodes a compact JWS. It checks syntax only.
func parseJWT(s string) (*token, error) {
	if len(s) > maxTokenLen {
		return nil, errMalformed
	}
	h, rest, ok1 := strings.Cut(s, ".")
	p, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return nil, errMalformed
	}
	var t token
	hb, err1 := b64.DecodeString(h)
	pb, err2 := b64.DecodeString(p)
	sb, err3 := b64.DecodeString(sig)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if err := json.Unmarshal(hb, &t.header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errMalformed, err)
	}
	if err := json.Unmarshal(pb, &t.claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	if err := json.Unmarshal(pb, &t.all); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", errMalformed, err)
	}
	t.signed = []byte(s[:len(h)+1+len(p)])
	t.sig = sb
	return &t, nil
}

// verify checks signature, issuer, audience and times, returning the
// subject and every claim (verified with it). The alg allow-list comes first: "none" and the HMAC algs are
// refused before any key is looked at, so a public JWKS key can never be
// used as an HMAC secret.
func (v *jwtVerifier) verify(ctx context.Context, s string, audiences []string) (string, map[string]any, error) {
	t, err := parseJWT(s)
	if err != nil {
		return "", nil, err
	}
	alg := t.header.Alg
	if alg != "RS256" && alg != "ES256" {
		return "", nil, fmt.Errorf("%w %q", errAlg, alg)
	}
	if len(t.header.Crit) > 0 {
		return "", nil, fmt.Errorf("%w: crit header names extensions kiln does not implement", errMalformed)
	}
	keys, err := v.keys.lookup(ctx, t.header.Kid, alg)
	if err != nil {
		return "", nil, err
	}
	if !slices.ContainsFunc(keys, func(k crypto.PublicKey) bool { return verifySig(alg, k, t.signed, t.sig) }) {
		return "", nil, errSignature
	}
	c := &t.claims
	if c.Iss != v.issuer {
		return "", nil, fmt.Errorf("%w %q", errIssuer, c.Iss)
	}
	if !slices.ContainsFunc(c.Aud, func(a string) bool { return slices.Contains(audiences, a) }) {
		return "", nil, fmt.Errorf("%w %q, want one of %q", errAudience, []string(c.Aud), audiences)
	}
	now := float64(v.now().Unix())
	slack := leeway.Seconds()
	switch {
	case c.Exp == nil:
		return "", nil, fmt.Errorf("%w: no exp claim", errMalformed)
	case now > *c.Exp+slack:
		return "", nil, errExpired
	case c.Nbf != nil && now < *c.Nbf-slack:
		return "", nil, errNotYet
	}
	return c.Sub, t.all, nil
}

// verifySig checks sig over signed with k under alg.
func verifySig(alg string, k crypto.PublicKey, signed, sig []byte) bool {
	digest := sha256.Sum256(signed)
	switch alg {
	case "RS256":
		pub, ok := k.(*rsa.PublicKey)
		return ok && rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
	case "ES256":
		pub, ok := k.(*ecdsa.PublicKey)
		// JWS ES256 signatures are R || S, 32 bytes each (RFC 7518 3.4).
		if !ok || len(sig) != 64 {
			return false
		}
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(pub, digest[:], r, s)
	}
	return false
}
