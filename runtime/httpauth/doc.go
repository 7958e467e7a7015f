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
//  5. Body: a POST body is read whole here, at most gateway.http.max_body
//     (413) within gateway.http.read_timeout (408); then the read deadline
//     is lifted so long calls and streams are not cut.
//  6. Sessions (protocol revisions before 2026-07-28, which is stateless):
//     an Mcp-Session-Id the guard did not see issued to this identity gets
//     404; sessions are capped per identity (max_sessions) and in total
//     (max_sessions_total), evicting the least recently used idle session
//     before refusing with 429, and closed after session_idle.
//
// Every refusal before authentication succeeds closes the connection
// without reading the rest of the body, and so do the answers that need no
// token when one is required, so a peer without a token holds nothing for
// longer than it takes to send its headers (ReadHeaderTimeout).
// Listener caps connections in total and per client IP before any of this.
//
// Identity: a JWT's subject; otherwise (the shared static token, or no
// auth on loopback) the client IP, since everyone holding the token is the
// same principal and only the address tells their machines apart.
//
// Authentication is enforced whenever a token or JWT issuer is configured.
// With neither, New refuses a listener that is not loopback, so a gateway
// holding credentials is never served unauthenticated to the network.
//
// Lifecycle: New once per listener (after net.Listen, so the bound address
// is known) → Listener(ln) and Wrap(the MCP handler) → serve, calling Sweep
// now and then. A Guard is safe for concurrent use and holds no goroutines.
package httpauth
