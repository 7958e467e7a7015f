package config

// Grants a backend's auth.grant accepts.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// Auth is OAuth 2.1 for an HTTP or SSE backend. Endpoints, scopes and the
// resource come from the backend itself (WWW-Authenticate, RFC 9728 and
// RFC 8414 metadata); only what the server cannot tell kiln is configured.
// Secrets (ClientSecret, PrivateKey) come from ${ENV} references only.
type Auth struct {
	// Grant is GrantAuthorizationCode (a person logs in once with
	// `kiln auth login`) or GrantClientCredentials (unattended).
	Grant string
	// ClientID and ClientSecret name a pre-registered client; without a
	// ClientID kiln uses ClientMetadataURL, then dynamic registration.
	ClientID, ClientSecret string
	// ClientMetadataURL is an HTTPS client ID metadata document URL.
	ClientMetadataURL string
	// TokenEndpointAuth is client_secret_basic, client_secret_post,
	// none or private_key_jwt; empty picks from the server's metadata.
	TokenEndpointAuth string
	// PrivateKey (PEM) and SigningAlg (ES256 or RS256) sign the
	// private_key_jwt client assertion.
	PrivateKey, SigningAlg string
	// Scopes, when set, are requested instead of the discovered ones.
	Scopes []string
	// RedirectURL is the loopback callback `kiln auth login` listens on
	// (default http://127.0.0.1:0/callback, a free port).
	RedirectURL string
}
