// Package console is kiln's window for people: a JSON API under /api/v1/
// (backends, tool search and schemas, a live event stream, tool docs, and
// per workspace a file tree, file view, download and exec) and the HTML
// console under /console/ that renders it, both served by kiln serve
// --http from templates and assets embedded in the binary.
//
// What a person sees comes through the same views, policy and scrubbing
// an agent's requests take (Source is the MCP server); an exec is the
// workspace's Bash tool called through the gateway's Caller, so it is
// confined, timed out, audited and scrubbed exactly like an agent's.
//
// Who may look: bearer tokens and JWTs as on /mcp (the front door's
// guard), or a browser session after an OpenID Connect login
// (authorization code + PKCE, nonce and state checked), kept in an
// HttpOnly, SameSite=Strict cookie signed with a key derived from the
// client secret, so every replica with the same config accepts it.
// State-changing requests need the session's CSRF token. With no auth
// configured the guard answers only on loopback, as for /mcp.
//
// Lifecycle: New → Handler (serve) → Publish from any goroutine → Close,
// which ends the event streams.
package console
