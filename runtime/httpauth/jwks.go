package httpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"sync"
	"time"
)

const (
	// refetchEvery is the floor between JWKS fetches, so tokens with made-up
	// kids cannot turn kiln into a load generator against the issuer.
	refetchEvery = time.Minute
	// keysMaxAge is when a cached JWKS is refreshed even without an unknown
	// kid, so keys the issuer retired stop being accepted.
	keysMaxAge = time.Hour
	// maxJWKSBytes bounds a fetched document; real ones are a few KiB.
	maxJWKSBytes = 1 << 20
	// minRSABits refuses keys too weak to trust (RFC 7518 3.3 requires
	// 2048 for RS256).
	minRSABits = 2048
)

// jwk is one usable verification key.
type jwk struct {
	kid string
	alg string // the one JWS alg this key serves
	key crypto.PublicKey
}

// keySet caches an issuer's JWKS.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time
	log    *slog.Logger

	fetchMu sync.Mutex // one fetch at a time

	mu      sync.Mutex // guards the fields below
	keys    []jwk
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
}

// lookup returns the keys that may have signed a token with kid and alg,
// fetching the JWKS when it has none, is stale or lacks kid.
func (ks *keySet) lookup(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	found, stale := ks.match(kid, alg)
	if len(found) > 0 && !stale {
		return found, nil
	}
	ks.refresh(ctx)
	if found, _ = ks.match(kid, alg); len(found) > 0 {
		return found, nil
	}
	return nil, fmt.Errorf("%w %q (alg %s)", errUnknownKey, kid, alg)
}

// match finds kid's keys for alg; an empty kid matches every key for alg.
func (ks *keySet) match(kid, alg string) (found []crypto.PublicKey, stale bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	for _, k := range ks.keys {
		if k.alg == alg && (kid == "" || k.kid == kid) {
			found = append(found, k.key)
		}
	}
	return found, ks.now().Sub(ks.fetched) >= keysMaxAge
}

// refresh fetches the JWKS unless an attempt was made within refetchEvery.
// A failed fetch keeps the keys already held.
func (ks *keySet) refresh(ctx context.Context) {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	ks.mu.Lock()
	if !ks.tried.IsZero() && ks.now().Sub(ks.tried) < refetchEvery {
		ks.mu.Unlock()
		return
	}
	ks.tried = ks.now()
	ks.mu.Unlock()

	keys, err := ks.fetch(ctx)
	if err != nil {
		ks.log.Warn("jwks fetch failed; JWTs signed by keys not already cached are refused", "url", ks.url, "err", err)
		return
	}
	ks.mu.Lock()
	ks.keys, ks.fetched = keys, ks.now()
	ks.mu.Unlock()
}

func (ks *keySet) fetch(ctx context.Context) ([]jwk, error) {
	// The fetch outlives the request that triggered it: a client hanging
	// up must not burn the once-a-minute attempt for everyone else.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks get: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks get: status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks read: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks larger than %d bytes", maxJWKSBytes)
	}
	return parseJWKS(body, ks.log)
}

// rawJWK holds the JWK members kiln reads (RFC 7517, RFC 7518 section 6).
type rawJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS decodes a JWK Set, keeping the RS256 and ES256 signing keys and
// skipping (with a debug line) any other, so one exotic key does not
// disable the rest.
func parseJWKS(body []byte, log *slog.Logger) ([]jwk, error) {
	var set struct {
		Keys []rawJWK `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("jwks decode: %w", err)
	}
	var keys []jwk
	for _, r := range set.Keys {
		k, err := r.key()
		if err != nil {
			log.Debug("jwks key skipped", "kid", r.Kid, "kty", r.Kty, "err", err)
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks has no RS256 or ES256 signing key")
	}
	return keys, nil
}

func (r rawJWK) key() (jwk, error) {
	if r.Use != "" && r.Use != "sig" {
		return jwk{}, fmt.Errorf("use %q is not sig", r.Use)
	}
	switch r.Kty {
	case "RSA":
		if r.Alg != "" && r.Alg != "RS256" {
			return jwk{}, fmt.Errorf("alg %q not supported", r.Alg)
		}
		n, err1 := b64.DecodeString(r.N)
		e, err2 := b64.DecodeString(r.E)
		if err := errors.Join(err1, err2); err != nil {
			return jwk{}, fmt.Errorf("rsa key: %w", err)
		}
		if len(e) == 0 || len(e) > 4 {
			return jwk{}, errors.New("rsa key: bad exponent")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
			return jwk{}, fmt.Errorf("rsa key: %d-bit modulus or exponent %d refused", pub.N.BitLen(), pub.E)
		}
		return jwk{kid: r.Kid, alg: "RS256", key: pub}, nil
	case "EC":
		if r.Crv != "P-256" || (r.Alg != "" && r.Alg != "ES256") {
			return jwk{}, fmt.Errorf("curve %q alg %q not supported", r.Crv, r.Alg)
		}
		x, err1 := b64.DecodeString(r.X)
		y, err2 := b64.DecodeString(r.Y)
		if err := errors.Join(err1, err2); err != nil || len(x) != 32 || len(y) != 32 {
			return jwk{}, errors.New("ec key: x and y must be 32 bytes of base64url")
		}
		// ParseUncompressedPublicKey rejects points not on the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, fmt.Errorf("ec key: %w", err)
		}
		return jwk{kid: r.Kid, alg: "ES256", key: pub}, nil
	}
	return jwk{}, fmt.Errorf("kty %q not supported", r.Kty)
}
