// Package httpauth guards kiln serve --http: the checks a request passes
// before it reaches the MCP handlers.
//
// Wrap applies them in a fixed order, each cheaper and less trusting than
// the next:
//
//  1. Host: DNS-rebinding defence. Loopback names and IPs, the bound IP,
//     the IP the connection arrived on (when bound to all interfaces) and
//     gateway.http.allowed_hosts pass; anything else gets 421.
//  2. Origin: a request that carries one must come from a loopback origin
//     or gateway.http.allowed_origins, else 403. Allowed origins get CORS
//     headers, and their preflights are answered here (204) because a
//     preflight never carries credentials.
//  3. /.well-known/oauth-protected-resource (and its /mcp suffixed form):
//     the RFC 9728 metadata document, served without authentication.
//  4. Bearer authentication: the static gateway.http.auth_token (compared in
//     constant time) or a JWT signed by a key in the issuer's JWKS (RS256 or
//     ES256 only). A failure gets 401 with a WWW-Authenticate header naming
//     the metadata document and a body of "unauthorized", whatever the
//     reason; the reason goes to the debug log.
//  5. Body size: gateway.http.max_body, 413 with a JSON-RPC error body.
//  6. Sessions per client IP: gateway.http.max_sessions, 429.
//
// Authentication is enforced whenever a token or JWT issuer is configured.
// With neither, New refuses a listener that is not loopback, so a gateway
// holding credentials is never served unauthenticated to the network.
//
// Lifecycle: New once per listener (after net.Listen, so the bound address
// is known) → Wrap the MCP handler → serve. A Guard is safe for concurrent
// use and holds no goroutines.
package httpauth
