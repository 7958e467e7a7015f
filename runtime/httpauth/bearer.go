package httpauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// maxTokenLen bounds the work one Authorization header can cause; real
// access tokens are a few KiB at most.
const maxTokenLen = 16 << 10

// parseBearer extracts the token of an RFC 6750 "Bearer" Authorization
// header. present reports that the client sent one or more Authorization
// headers at all, so the 401 can say whether a token was rejected.
func parseBearer(values []string) (token string, present, ok bool) {
	if len(values) == 0 {
		return "", false, false
	}
	if len(values) > 1 {
		return "", true, false
	}
	scheme, rest, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", true, false
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || len(token) > maxTokenLen || !isToken68(token) {
		return "", true, false
	}
	return token, true, true
}

// isToken68 checks RFC 7235's token68 syntax, which is what a JWT or a
// generated secret is made of; anything else cannot be a valid token.
func isToken68(s string) bool {
	trailing := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			trailing = true
		case trailing:
			return false
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return s[0] != '='
}

// authenticate checks r's bearer token, writing the 401 itself on failure.
// On success it removes the Authorization header so the token never reaches
// handlers, logs or backends (MCP forbids token passthrough), and returns
// who called: a JWT's subject and claims, or the static token's holder.
func (g *Guard) authenticate(w http.ResponseWriter, r *http.Request) (id toolcall.Identity, ok bool) {
	token, present, ok := parseBearer(r.Header.Values("Authorization"))
	reason := "no bearer token"
	switch {
	case present && !ok:
		reason = "malformed Authorization header"
	case ok:
		if g.tokenMatches(token) {
			r.Header.Del("Authorization")
			return toolcall.Identity{Kind: config.KindToken}, true
		}
		reason = "token does not match gateway.http.auth_token"
		if g.tokenHash == nil {
			reason = "token is not a JWT"
		}
		if g.jwt != nil && strings.Count(token, ".") == 2 {
			sub, claims, err := g.jwt.verify(r.Context(), token, g.audiences(r))
			if err == nil {
				g.log.Debug("http request authenticated", "sub", sub, "remote", r.RemoteAddr)
				r.Header.Del("Authorization")
				return toolcall.Identity{Kind: config.KindJWT, Subject: sub, Claims: claims}, true
			}
			reason = "jwt: " + err.Error()
		}
	}
	g.log.Debug("http request unauthorized", "reason", reason, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	g.unauthorized(w, r, present)
	return toolcall.Identity{}, false
}

// tokenMatches compares digests so neither the content nor the length of
// the configured token shows in the timing.
func (g *Guard) tokenMatches(token string) bool {
	if g.tokenHash == nil {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], g.tokenHash[:]) == 1
}

// audiences are the aud values a JWT may carry: the configured audience,
// or else the identifiers the metadata documents publish.
func (g *Guard) audiences(r *http.Request) []string {
	if g.jwt.audience != "" {
		return []string{g.jwt.audience}
	}
	res := g.resource(r)
	return []string{res, res + "/", res + "/mcp"}
}

// unauthorized writes the one 401 every failure gets: the body and headers
// differ only in whether a token was sent, which the client already knows.
func (g *Guard) unauthorized(w http.ResponseWriter, r *http.Request, sent bool) {
	v := `Bearer resource_metadata="` + g.resource(r) + metadataPath + `"`
	if sent {
		v += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", v)
	// A peer that cannot authenticate keeps nothing open: not the
	// connection, not the body it may still be sending.
	hangUp(w, r)
	plain(w, http.StatusUnauthorized, "unauthorized")
}
