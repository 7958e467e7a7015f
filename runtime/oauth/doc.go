// Package oauth gives HTTP and SSE backends OAuth 2.1: an http.Client whose
// transport adds a bearer token, and on a 401 or 403 challenge discovers the
// authorization server (RFC 9728 protected-resource metadata, RFC 8414 or
// OpenID metadata), obtains a token (authorization code with PKCE, or
// client credentials), and retries once. Tokens live in a TokenStore:
// files under state_dir shared by every kiln process on the machine, or,
// with gateway.state_url, runtime/state's Redis shared by a fleet.
//
// Lifecycle: NewManager → HTTPClient per backend (runtime/backend passes it
// to the SDK transport) → Login, Status and Logout for the CLI. The
// discovery, registration and authorization-code mechanics come from the
// go-sdk's auth package; the client credentials grant (client_secret_basic,
// client_secret_post, private_key_jwt), which that package does not offer
// with assertions, and the token store are kiln's own.
package oauth
