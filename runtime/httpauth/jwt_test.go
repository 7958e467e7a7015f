package httpauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/config"
)

const issuer = "https://issuer.example"

// Keys are generated once: RSA generation dominates the package's run time.
var testKeys = sync.OnceValue(func() (k struct {
	rsa, rsa2 *rsa.PrivateKey
	ec, ec2   *ecdsa.PrivateKey
}) {
	var err error
	for _, p := range []**rsa.PrivateKey{&k.rsa, &k.rsa2} {
		if *p, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	}
	for _, p := range []**ecdsa.PrivateKey{&k.ec, &k.ec2} {
		if *p, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	}
	return k
})

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func rsaJWK(kid string, k *rsa.PublicKey) map[string]string {
	return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
}

func ecJWK(kid string, k *ecdsa.PublicKey) map[string]string {
	raw, err := k.Bytes()
	if err != nil {
		panic(err)
	}
	return map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": enc(raw[1:33]), "y": enc(raw[33:])}
}

// sign makes a compact JWS. key is an *rsa.PrivateKey, *ecdsa.PrivateKey,
// []byte (HMAC secret) or nil (alg none).
func sign(t testing.TB, header, claims map[string]any, key any) string {
	t.Helper()
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	in := enc(hb) + "." + enc(cb)
	digest := sha256.Sum256([]byte(in))
	var sig []byte
	var err error
	switch k := key.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
	case *ecdsa.PrivateKey:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k, digest[:])
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(in))
		sig = m.Sum(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + enc(sig)
}

// jwksServer serves whatever keys holds and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []map[string]string
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, keys ...map[string]string) *jwksServer {
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(keys ...map[string]string) {
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Unix(1_800_000_000, 0)

func jwtGuard(t *testing.T, srv *jwksServer, c *clock, audience string) *Guard {
	return newGuard(t, config.HTTP{JWTIssuer: issuer, JWKSURL: srv.URL, Audience: audience},
		Options{Client: srv.Client(), Now: c.now})
}

func claims(mod func(map[string]any)) map[string]any {
	c := map[string]any{"iss": issuer, "sub": "alice", "aud": "http://127.0.0.1:8080", "exp": t0.Unix() + 300, "iat": t0.Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestJWT(t *testing.T) {
	k := testKeys()
	der, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rs := map[string]any{"alg": "RS256", "kid": "r1", "typ": "JWT"}
	es := map[string]any{"alg": "ES256", "kid": "e1"}
	with := func(h map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name     string
		audience string // configured
		token    func(t *testing.T) string
		want     error // nil: accepted
	}{
		{name: "RS256", token: func(t *testing.T) string { return sign(t, rs, claims(nil), k.rsa) }},
		{name: "ES256", token: func(t *testing.T) string { return sign(t, es, claims(nil), k.ec) }},
		{name: "no kid", token: func(t *testing.T) string { return sign(t, map[string]any{"alg": "ES256"}, claims(nil), k.ec) }},
		{name: "aud array", token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["aud"] = []string{"other", "http://127.0.0.1:8080/mcp"} }), k.rsa)
		}},
		{name: "configured audience", audience: "kiln-api", token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["aud"] = "kiln-api" }), k.rsa)
		}},
		{name: "resource aud when audience configured", audience: "kiln-api", want: errAudience,
			token: func(t *testing.T) string { return sign(t, rs, claims(nil), k.rsa) }},
		{name: "expired within leeway", token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["exp"] = t0.Unix() - 30 }), k.rsa)
		}},
		{name: "bad signature", want: errSignature, token: func(t *testing.T) string { return sign(t, rs, claims(nil), k.rsa2) }},
		{name: "bad ES256 signature", want: errSignature, token: func(t *testing.T) string { return sign(t, es, claims(nil), k.ec2) }},
		{name: "tampered claims", want: errSignature, token: func(t *testing.T) string {
			good := strings.Split(sign(t, rs, claims(nil), k.rsa), ".")
			evil, _ := json.Marshal(claims(func(c map[string]any) { c["sub"] = "root" }))
			return good[0] + "." + enc(evil) + "." + good[2]
		}},
		{name: "RS256 header on EC kid", want: errUnknownKey, token: func(t *testing.T) string { return sign(t, with(rs, "kid", "e1"), claims(nil), k.rsa) }},
		{name: "wrong issuer", want: errIssuer, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["iss"] = "https://evil.example" }), k.rsa)
		}},
		{name: "wrong audience", want: errAudience, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["aud"] = "https://other.example" }), k.rsa)
		}},
		{name: "no audience", want: errAudience, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { delete(c, "aud") }), k.rsa)
		}},
		{name: "expired", want: errExpired, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["exp"] = t0.Unix() - 61 }), k.rsa)
		}},
		{name: "no exp", want: errMalformed, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { delete(c, "exp") }), k.rsa)
		}},
		{name: "not yet valid", want: errNotYet, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["nbf"] = t0.Unix() + 120 }), k.rsa)
		}},
		{name: "alg none", want: errAlg, token: func(t *testing.T) string { return sign(t, with(rs, "alg", "none"), claims(nil), nil) }},
		{name: "alg None", want: errAlg, token: func(t *testing.T) string { return sign(t, with(rs, "alg", "None"), claims(nil), nil) }},
		{name: "HS256 with public key as secret", want: errAlg, token: func(t *testing.T) string {
			return sign(t, with(rs, "alg", "HS256"), claims(nil), der)
		}},
		{name: "PS256", want: errAlg, token: func(t *testing.T) string { return sign(t, with(rs, "alg", "PS256"), claims(nil), k.rsa) }},
		{name: "crit", want: errMalformed, token: func(t *testing.T) string {
			return sign(t, with(rs, "crit", []string{"exp"}), claims(nil), k.rsa)
		}},
		{name: "unknown kid", want: errUnknownKey, token: func(t *testing.T) string { return sign(t, with(rs, "kid", "r9"), claims(nil), k.rsa) }},
		{name: "four parts", want: errMalformed, token: func(t *testing.T) string { return sign(t, rs, claims(nil), k.rsa) + ".x" }},
		{name: "padded", want: errMalformed, token: func(t *testing.T) string { return sign(t, rs, claims(nil), k.rsa) + "==" }},
		{name: "exp as string", want: errMalformed, token: func(t *testing.T) string {
			return sign(t, rs, claims(func(c map[string]any) { c["exp"] = "soon" }), k.rsa)
		}},
	}
	srv := newJWKSServer(t, rsaJWK("r1", &k.rsa.PublicKey), ecJWK("e1", &k.ec.PublicKey))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := jwtGuard(t, srv, &clock{t0}, tt.audience)
			tok := tt.token(t)
			_, _, err := g.jwt.verify(t.Context(), tok, g.audiences(req("GET", "/mcp", "")))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("verify: %v, want %v", err, tt.want)
			}
			// The same verdict through the front door.
			w := serve(g.Wrap(newFakeMCP()), req("GET", "/mcp", "", "Authorization", "Bearer "+tok))
			if tt.want == nil {
				expectStatus(t, w, 200)
				return
			}
			expectStatus(t, w, 401)
			if got := w.Header().Get("WWW-Authenticate"); !strings.HasSuffix(got, `, error="invalid_token"`) {
				t.Errorf("WWW-Authenticate = %q, want invalid_token", got)
			}
		})
	}
}

// TestJWTAndToken checks both methods work when both are configured.
func TestJWTAndToken(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("r1", &k.rsa.PublicKey))
	g := newGuard(t, config.HTTP{AuthToken: goodTok, JWTIssuer: issuer, JWKSURL: srv.URL}, Options{Client: srv.Client(), Now: (&clock{t0}).now})
	for tok, want := range map[string]int{
		goodTok: 200,
		sign(t, map[string]any{"alg": "RS256", "kid": "r1"}, claims(nil), k.rsa):  200,
		sign(t, map[string]any{"alg": "RS256", "kid": "r1"}, claims(nil), k.rsa2): 401,
		"wrong": 401,
	} {
		expectStatus(t, serve(g.Wrap(newFakeMCP()), req("GET", "/mcp", "", "Authorization", "Bearer "+tok)), want)
	}
}

func TestJWKSRefetch(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("r1", &k.rsa.PublicKey))
	c := &clock{t0}
	g := jwtGuard(t, srv, c, "")
	aud := g.audiences(req("GET", "/mcp", ""))
	tok := func(kid string, key any) string {
		alg := "RS256"
		if _, ok := key.(*ecdsa.PrivateKey); ok {
			alg = "ES256"
		}
		return sign(t, map[string]any{"alg": alg, "kid": kid}, claims(func(m map[string]any) { m["exp"] = c.t.Unix() + 300 }), key)
	}
	step := func(name, token string, wantErr error, wantFetches int64) {
		t.Helper()
		_, _, err := g.jwt.verify(t.Context(), token, aud)
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			t.Errorf("%s: verify: %v, want %v", name, err, wantErr)
		}
		if got := srv.fetches.Load(); got != wantFetches {
			t.Errorf("%s: fetches = %d, want %d", name, got, wantFetches)
		}
	}
	step("first use fetches", tok("r1", k.rsa), nil, 1)
	step("cached", tok("r1", k.rsa), nil, 1)
	srv.set(rsaJWK("r1", &k.rsa.PublicKey), ecJWK("e1", &k.ec.PublicKey))
	c.t = c.t.Add(2 * time.Minute)
	step("unknown kid refetches", tok("e1", k.ec), nil, 2)
	step("made-up kid within a minute does not refetch", tok("zz", k.ec), errUnknownKey, 2)
	srv.set(ecJWK("e2", &k.ec2.PublicKey))
	c.t = c.t.Add(30 * time.Second)
	step("rotated kid within a minute", tok("e2", k.ec2), errUnknownKey, 2)
	c.t = c.t.Add(31 * time.Second)
	step("rotated kid after a minute", tok("e2", k.ec2), nil, 3)
	step("retired key still cached", tok("r1", k.rsa), errUnknownKey, 3)
	c.t = c.t.Add(2 * time.Hour)
	srv.set(rsaJWK("r1", &k.rsa.PublicKey))
	step("stale set refreshed", tok("r1", k.rsa), nil, 4)
	step("retired e2 gone after refresh", tok("e2", k.ec2), errUnknownKey, 4)
}

// TestJWKSFailure checks a failing issuer keeps the cached keys and is not
// hammered.
func TestJWKSFailure(t *testing.T) {
	k := testKeys()
	var fail atomic.Bool
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{
			rsaJWK("r1", &k.rsa.PublicKey),
			map[string]string{"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
			map[string]string{"kty": "RSA", "kid": "weak", "n": enc(big.NewInt(1<<40 + 1).Bytes()), "e": "AQAB"},
			map[string]string{"kty": "EC", "kid": "bad-point", "crv": "P-256", "x": enc(make([]byte, 32)), "y": enc(make([]byte, 32))},
		}})
	}))
	t.Cleanup(srv.Close)
	c := &clock{t0}
	g := newGuard(t, config.HTTP{JWTIssuer: issuer, JWKSURL: srv.URL}, Options{Client: srv.Client(), Now: c.now})
	aud := g.audiences(req("GET", "/mcp", ""))
	good := func() string {
		return sign(t, map[string]any{"alg": "RS256", "kid": "r1"}, claims(func(m map[string]any) { m["exp"] = c.t.Unix() + 60 }), k.rsa)
	}
	if _, _, err := g.jwt.verify(t.Context(), good(), aud); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if n := len(g.jwt.keys.keys); n != 1 {
		t.Errorf("kept %d keys, want 1 (oct, weak RSA and off-curve EC skipped)", n)
	}
	fail.Store(true)
	c.t = c.t.Add(2 * time.Hour)
	if _, _, err := g.jwt.verify(t.Context(), good(), aud); err != nil {
		t.Errorf("verify with issuer down and stale cache: %v", err)
	}
	if _, _, err := g.jwt.verify(t.Context(), good(), aud); err != nil {
		t.Errorf("verify again: %v", err)
	}
	if got := fetches.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2 (one refresh attempt per minute)", got)
	}
}

// TestNoInformationLeak checks every refusal looks the same to the client
// apart from whether it sent a token.
func TestNoInformationLeak(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("r1", &k.rsa.PublicKey))
	g := newGuard(t, config.HTTP{AuthToken: goodTok, JWTIssuer: issuer, JWKSURL: srv.URL}, Options{Client: srv.Client(), Now: (&clock{t0}).now})
	rs := map[string]any{"alg": "RS256", "kid": "r1"}
	auths := map[string]string{
		"near token":  "Bearer " + goodTok[:len(goodTok)-1] + "X",
		"short token": "Bearer a",
		"basic":       "Basic " + goodTok,
		"malformed":   "Bearer a b",
		"bad sig":     "Bearer " + sign(t, rs, claims(nil), k.rsa2),
		"wrong iss":   "Bearer " + sign(t, rs, claims(func(c map[string]any) { c["iss"] = "x" }), k.rsa),
		"wrong aud":   "Bearer " + sign(t, rs, claims(func(c map[string]any) { c["aud"] = "x" }), k.rsa),
		"expired":     "Bearer " + sign(t, rs, claims(func(c map[string]any) { c["exp"] = 1 }), k.rsa),
		"unknown kid": "Bearer " + sign(t, map[string]any{"alg": "RS256", "kid": "nope"}, claims(nil), k.rsa),
		"alg none":    "Bearer " + sign(t, map[string]any{"alg": "none"}, claims(nil), nil),
		"garbage jwt": "Bearer a.b.c",
	}
	type answer struct {
		Status int
		Header http.Header
		Body   string
	}
	var first *answer
	var firstName string
	for name, a := range auths {
		w := serve(g.Wrap(newFakeMCP()), req("POST", "/mcp", "{}", "Authorization", a))
		got := &answer{w.Code, w.Header(), w.Body.String()}
		if got.Status != 401 || got.Body != "unauthorized\n" {
			t.Errorf("%s: %d %q, want 401 unauthorized", name, got.Status, got.Body)
		}
		if first == nil {
			first, firstName = got, name
			continue
		}
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("%s differs from %s (-want +got):\n%s", name, firstName, diff)
		}
	}
	// Without a token the only difference is the missing error attribute.
	w := serve(g.Wrap(newFakeMCP()), req("POST", "/mcp", "{}"))
	if w.Body.String() != first.Body || w.Header().Get("WWW-Authenticate")+`, error="invalid_token"` != first.Header.Get("WWW-Authenticate") {
		t.Errorf("no-token 401 = %q %q", w.Header().Get("WWW-Authenticate"), w.Body.String())
	}
}
