package httpauth

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// ErrAuthRequired is returned by New when the listener is not loopback and
// neither a bearer token nor JWT validation is configured.
var ErrAuthRequired = errors.New("gateway.http.auth_token is required")

// Defaults for zero config and option values: gateway.http's, which the
// config declares once.
var (
	DefaultMaxBody          = config.DefaultGateway().HTTP.MaxBody
	DefaultMaxSessions      = config.DefaultGateway().HTTP.MaxSessions
	DefaultMaxSessionsTotal = config.DefaultGateway().HTTP.MaxSessionsTotal
	DefaultSessionIdle      = config.DefaultGateway().HTTP.SessionIdle
	DefaultReadTimeout      = config.DefaultGateway().HTTP.ReadTimeout
)

// ssePath is where the legacy SSE transport opens its sessions
// (runtime/server registers it at /sse).
const ssePath = "/sse"

// Options are the run-time facts a Guard needs besides the config.
type Options struct {
	// Addr is the bound listen address as host:port, ideally
	// ln.Addr().String() after net.Listen, so a :0 port is resolved and the
	// host is an IP. Required.
	Addr string
	// BaseURL is the public URL clients use (scheme://host[:port], no
	// path), the resource identifier in the metadata document and the
	// default JWT audience. Empty means scheme://<Host header> per request,
	// which matches whatever URL the client used; the Host check has
	// already vetted that header. Set it behind a TLS-terminating proxy.
	BaseURL string
	// Logger receives rejection reasons at debug level and JWKS fetch
	// failures at warn level; nil discards.
	Logger *slog.Logger
	// Client fetches the JWKS; nil means a client with a 10s timeout.
	Client *http.Client
	// Now is the clock for JWT times, JWKS refresh, session expiry and
	// body deadlines; nil means time.Now.
	Now func() time.Time
}

// Guard is the front-door middleware built by New.
type Guard struct {
	log         *slog.Logger
	now         func() time.Time
	base        string
	maxBody     int64
	readTimeout time.Duration

	maxConns, maxConnsPerClient int

	// Host check.
	boundIP  netip.Addr // invalid when bound to a name
	anyIP    bool       // bound to 0.0.0.0 or ::
	hosts    []string   // lower-case allowed_hosts entries
	origins  []string   // lower-case allowed_origins, no trailing slash
	loopback bool

	// Authentication; auth is false when neither is configured.
	auth      bool
	tokenHash *[sha256.Size]byte
	jwt       *jwtVerifier

	sessions *sessions
	// inner is the handler Wrap guards, which the guard's own DELETEs of
	// evicted sessions go to.
	inner http.Handler
}

// New builds the Guard for one listener. It fails with ErrAuthRequired when
// the listener reaches beyond loopback and no authentication is configured.
func New(cfg config.HTTP, opts Options) (*Guard, error) {
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("httpauth: listen address %q: want host:port such as 127.0.0.1:8080: %w", opts.Addr, err)
	}
	g := &Guard{
		log:         cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		now:         opts.Now,
		maxBody:     cmp.Or(cfg.MaxBody, DefaultMaxBody),
		readTimeout: cmp.Or(cfg.ReadTimeout, DefaultReadTimeout),
	}
	g.maxConns, g.maxConnsPerClient = connCaps(cfg.MaxConnections, cfg.MaxConnectionsPerClient)
	if g.now == nil {
		g.now = time.Now
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		g.boundIP = ip.Unmap()
		g.anyIP = ip.IsUnspecified()
		g.loopback = ip.IsLoopback()
	} else {
		g.anyIP = host == ""
		g.loopback = isLoopbackName(host)
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("httpauth: base URL %q: want scheme://host[:port] such as https://kiln.example.com", opts.BaseURL)
		}
		g.base = strings.TrimSuffix(opts.BaseURL, "/")
	}
	for _, h := range cfg.AllowedHosts {
		g.hosts = append(g.hosts, strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), "."))
	}
	for _, o := range cfg.AllowedOrigins {
		g.origins = append(g.origins, normalizeOrigin(o))
	}

	if cfg.AuthToken != "" {
		sum := sha256.Sum256([]byte(cfg.AuthToken))
		g.tokenHash = &sum
	}
	switch {
	case cfg.JWTIssuer != "" && cfg.JWKSURL != "":
		client := opts.Client
		if client == nil {
			client = &http.Client{Timeout: 10 * time.Second}
		}
		ks := &keySet{url: cfg.JWKSURL, client: client, now: g.now, log: g.log}
		g.jwt = &jwtVerifier{issuer: cfg.JWTIssuer, audience: cfg.Audience, keys: ks, now: g.now}
	case cfg.JWTIssuer != "" || cfg.JWKSURL != "":
		return nil, errors.New("httpauth: gateway.http.jwt_issuer and gateway.http.jwks_url go together; set both to validate JWTs, or neither")
	}
	g.auth = g.tokenHash != nil || g.jwt != nil
	if !g.auth && !g.loopback {
		return nil, fmt.Errorf("the address is not loopback: %w; set auth_token: ${KILN_HTTP_TOKEN} under gateway.http in kiln.yaml and export KILN_HTTP_TOKEN (or configure jwt_issuer and jwks_url), or bind 127.0.0.1", ErrAuthRequired)
	}
	g.sessions = newSessions(cmp.Or(cfg.MaxSessions, DefaultMaxSessions), cmp.Or(cfg.MaxSessionsTotal, DefaultMaxSessionsTotal),
		cmp.Or(cfg.SessionIdle, DefaultSessionIdle), g.now)
	return g, nil
}

// AuthRequired reports whether Wrap demands a bearer token.
func (g *Guard) AuthRequired() bool { return g.auth }

// Wrap returns h behind the guard's checks. Wrap the whole mux (/mcp, /sse,
// /message) so the metadata document and unknown paths are covered too.
// Call it once: the guard terminates evicted sessions through h.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	g.inner = h
	return g.Protect(h)
}

// Protect returns h behind the same checks as Wrap, for the other routes
// of the listener (/metrics, the console's API): unlike Wrap it leaves the
// MCP handler that evicted sessions are ended through alone.
func (g *Guard) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serve(w, r, h)
	})
}

func (g *Guard) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if !g.hostAllowed(r) {
		g.log.Debug("http request refused", "reason", "host not allowed", "host", r.Host, "remote", r.RemoteAddr)
		hangUp(w, r)
		plain(w, http.StatusMisdirectedRequest, "host not allowed: add it to gateway.http.allowed_hosts")
		return
	}
	// The answers that need no token (preflights, the metadata document)
	// end their connection when tokens are required, so no connection
	// stays open without authenticating.
	if g.auth && ((r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "") || strings.HasPrefix(r.URL.Path, metadataPath)) {
		hangUp(w, r)
	}
	if origin := r.Header.Values("Origin"); len(origin) > 0 {
		if len(origin) > 1 || !g.originAllowed(origin[0]) {
			g.log.Debug("http request refused", "reason", "origin not allowed", "origin", origin, "remote", r.RemoteAddr)
			hangUp(w, r)
			plain(w, http.StatusForbidden, "origin not allowed")
			return
		}
		if corsHeaders(w, r, origin[0]) {
			return
		}
	}
	if serveMetadata(w, r, g.resource(r), g.issuer()) {
		return
	}
	identity := "addr " + clientIP(r)
	who := toolcall.Identity{Kind: config.KindAddr, Subject: clientIP(r)}
	if g.auth {
		id, ok := g.authenticate(w, r)
		if !ok {
			return
		}
		if id.Kind == config.KindJWT {
			identity = "sub " + id.Subject
			who = id
		} else {
			// Everyone holding the static token is one principal; the
			// address still tells sessions apart (identityOf).
			who = toolcall.Identity{Kind: config.KindToken}
		}
	}
	// Every call of the request runs for who: the policy, limits and
	// audit log read it from the context (toolcall.IdentityFrom).
	r = r.WithContext(toolcall.WithIdentity(r.Context(), who))
	g.limitAndServe(w, r, h, identity)
}

// resource is the protected resource's identifier for r.
func (g *Guard) resource(r *http.Request) string {
	if g.base != "" {
		return g.base
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (g *Guard) issuer() string {
	if g.jwt == nil {
		return ""
	}
	return g.jwt.issuer
}

// hostAllowed is the DNS-rebinding check: a rebinding page reaches us under
// the attacker's DNS name, so only names we know pass. IP literals other
// than ours are refused too, which keeps the rule simple to state.
func (g *Guard) hostAllowed(r *http.Request) bool {
	if r.Host == "" {
		return false
	}
	full := strings.TrimSuffix(strings.ToLower(r.Host), ".")
	name := full
	if h, _, err := net.SplitHostPort(full); err == nil {
		name = strings.TrimSuffix(h, ".")
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if isLoopbackName(name) {
		return true
	}
	for _, a := range g.hosts {
		if a == name || a == full {
			return true
		}
	}
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if g.boundIP.IsValid() && !g.anyIP && ip == g.boundIP {
		return true
	}
	if g.anyIP {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ap, err := netip.ParseAddrPort(la.String()); err == nil && ap.Addr().Unmap() == ip {
				return true
			}
		}
	}
	return false
}

func (g *Guard) originAllowed(origin string) bool {
	o := normalizeOrigin(origin)
	for _, a := range g.origins {
		if a == o {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return isLoopbackName(u.Hostname())
}

func normalizeOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// isLoopbackName reports whether host (no port, no brackets) can only mean
// this machine.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// corsHeaders marks an allowed origin's response readable and answers its
// preflight, which carries no credentials and so must not meet the bearer
// check. It reports whether the request was answered.
func corsHeaders(w http.ResponseWriter, r *http.Request, origin string) bool {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return true
}

func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}
