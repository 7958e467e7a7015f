package httpauth

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
)

// FuzzBearerHeader checks Authorization parsing and the whole guard never
// panic, and that only the configured token gets through.
func FuzzBearerHeader(f *testing.F) {
	for _, s := range []string{"Bearer " + goodTok, "bearer  x", "Bearer", "Basic abc", "", "Bearer a=b=", "Bearer ==", "Bearer \x00", "Bearer " + strings.Repeat("A", 100)} {
		f.Add(s)
	}
	g, err := New(config.HTTP{AuthToken: goodTok}, Options{Addr: loopAddr})
	if err != nil {
		f.Fatal(err)
	}
	h := g.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	f.Fuzz(func(t *testing.T, header string) {
		tok, present, ok := parseBearer([]string{header})
		if !present || (ok && (tok == "" || strings.ContainsAny(tok, " \t"))) {
			t.Fatalf("parseBearer(%q) = %q, %v, %v", header, tok, present, ok)
		}
		r := req("GET", "/mcp", "")
		r.Header["Authorization"] = []string{header}
		w := serve(h, r)
		if want := ok && tok == goodTok; (w.Code == 200) != want {
			t.Fatalf("header %q: status %d", header, w.Code)
		}
	})
}

// FuzzJWT checks token parsing and verification never panic and never
// accept a token other than the validly signed seeds: the signature covers
// the exact header and payload bytes and base64 decoding is strict, so no
// mutation the fuzzer can make keeps a signature valid.
func FuzzJWT(f *testing.F) {
	k := testKeys()
	valid := []string{
		sign(f, map[string]any{"alg": "RS256", "kid": "r1"}, claims(nil), k.rsa),
		sign(f, map[string]any{"alg": "ES256"}, claims(nil), k.ec),
	}
	for _, s := range append(valid,
		sign(f, map[string]any{"alg": "none"}, claims(nil), nil),
		"a.b.c", "..", "e30.e30.", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA", "",
	) {
		f.Add(s)
	}
	set, err := json.Marshal(map[string]any{"keys": []any{rsaJWK("r1", &k.rsa.PublicKey), ecJWK("e1", &k.ec.PublicKey)}})
	if err != nil {
		f.Fatal(err)
	}
	now := (&clock{t0}).now
	ks := &keySet{now: now, fetched: t0, tried: t0}
	if ks.keys, err = parseJWKS(set, slog.New(slog.DiscardHandler)); err != nil {
		f.Fatal(err)
	}
	v := &jwtVerifier{issuer: issuer, keys: ks, now: now}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseJWT(s)
		if _, _, err := v.verify(t.Context(), s, []string{"http://127.0.0.1:8080"}); err == nil && !slices.Contains(valid, s) {
			t.Fatalf("accepted forged token %q", s)
		}
	})
}
