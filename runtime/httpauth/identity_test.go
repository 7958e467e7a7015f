package httpauth

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// seen records the identity a request's context carried into the handler.
func seen(got *toolcall.Identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := toolcall.IdentityFrom(r.Context())
		if !ok {
			id = toolcall.Identity{Kind: "none"}
		}
		*got = id
	})
}

func TestIdentityInContext(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, rsaJWK("r1", &k.rsa.PublicKey))
	rs := map[string]any{"alg": "RS256", "kid": "r1"}

	t.Run("jwt: subject and every verified claim", func(t *testing.T) {
		g := jwtGuard(t, srv, &clock{t0}, "")
		tok := sign(t, rs, claims(func(c map[string]any) { c["groups"] = []string{"ci", "ops"}; c["scope"] = "read deploy" }), k.rsa)
		var got toolcall.Identity
		expectStatus(t, serve(g.Wrap(seen(&got)), req("GET", "/mcp", "", "Authorization", "Bearer "+tok)), 200)
		want := toolcall.Identity{Kind: "jwt", Subject: "alice", Claims: map[string]any{"iss": issuer, "sub": "alice", "aud": "http://127.0.0.1:8080",
			"exp": float64(t0.Unix() + 300), "iat": float64(t0.Unix()), "groups": []any{"ci", "ops"}, "scope": "read deploy"}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("identity (-want +got):\n%s", d)
		}
	})
	t.Run("static token", func(t *testing.T) {
		g := newGuard(t, config.HTTP{AuthToken: "s3cret-token"}, Options{})
		var got toolcall.Identity
		expectStatus(t, serve(g.Wrap(seen(&got)), req("GET", "/mcp", "", "Authorization", "Bearer s3cret-token")), 200)
		if d := cmp.Diff(toolcall.Identity{Kind: "token"}, got); d != "" {
			t.Errorf("identity (-want +got):\n%s", d)
		}
	})
	t.Run("no auth on loopback: the client address", func(t *testing.T) {
		g := newGuard(t, config.HTTP{}, Options{})
		var got toolcall.Identity
		expectStatus(t, serve(g.Wrap(seen(&got)), req("GET", "/mcp", "")), 200)
		if d := cmp.Diff(toolcall.Identity{Kind: "addr", Subject: "10.9.8.7"}, got); d != "" {
			t.Errorf("identity (-want +got):\n%s", d)
		}
	})
}
