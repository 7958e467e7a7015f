package httpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/config"
)

const (
	loopAddr = "127.0.0.1:8080"
	anyAddr  = "0.0.0.0:8080"
	goodTok  = "s3cret-token-value"
)

// fakeMCP stands in for the mcp-go handlers: initialize mints a session,
// a request on an unknown session gets 404, DELETE ends a session, and
// every POST reads its whole body the way mcp-go does. It is a double
// because the guard's unit tests need to see what reaches the handler;
// tests/hostile_http_test.go runs the real server behind the guard.
type fakeMCP struct {
	next     atomic.Int64
	live     map[string]bool
	calls    atomic.Int64
	lastAuth atomic.Value // Authorization header the handler saw
}

func newFakeMCP() *fakeMCP { return &fakeMCP{live: map[string]bool{}} }

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.lastAuth.Store(r.Header.Get("Authorization"))
	sid := r.Header.Get(sessionHeader)
	if modernProtocol(r.Header.Get(protocolHeader)) {
		sid = "" // as the SDK does: 2026-07-28 has no sessions
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read request body error: "+err.Error(), http.StatusBadRequest)
			return
		}
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "initialize" {
			id := fmt.Sprintf("s-%d", f.next.Add(1))
			f.live[id] = true
			w.Header().Set(sessionHeader, id)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
	}
	if sid != "" && !f.live[sid] {
		http.Error(w, "Invalid session ID", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		delete(f.live, sid)
	}
	_, _ = io.WriteString(w, "ok")
}

func newGuard(t *testing.T, cfg config.HTTP, opts Options) *Guard {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = loopAddr
	}
	g, err := New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

// req builds a request to the loopback listener from client 10.9.8.7.
func req(method, target, body string, hdr ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://"+loopAddr+target, rd)
	r.RemoteAddr = "10.9.8.7:5555"
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func expectStatus(t *testing.T, w *httptest.ResponseRecorder, want int) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("status = %d, want %d; body %q", w.Code, want, w.Body.String())
	}
}

func TestNew(t *testing.T) {
	jwt := config.HTTP{JWTIssuer: "https://issuer.example", JWKSURL: "https://issuer.example/jwks"}
	tests := []struct {
		name     string
		cfg      config.HTTP
		opts     Options
		wantAuth bool
		wantErr  string // substring; "" means success
		wantIs   error
	}{
		{name: "loopback v4 without auth", opts: Options{Addr: "127.0.0.1:0"}},
		{name: "loopback v6 without auth", opts: Options{Addr: "[::1]:9000"}},
		{name: "localhost without auth", opts: Options{Addr: "localhost:9000"}},
		{name: "loopback with token", cfg: config.HTTP{AuthToken: "x"}, opts: Options{Addr: loopAddr}, wantAuth: true},
		{name: "all interfaces without auth", opts: Options{Addr: anyAddr}, wantErr: "auth_token: ${KILN_HTTP_TOKEN}", wantIs: ErrAuthRequired},
		{name: "empty host without auth", opts: Options{Addr: ":8080"}, wantErr: "gateway.http.auth_token", wantIs: ErrAuthRequired},
		{name: "lan IP without auth", opts: Options{Addr: "192.168.1.5:8080"}, wantErr: "gateway.http.auth_token", wantIs: ErrAuthRequired},
		{name: "name without auth", opts: Options{Addr: "kiln.internal:8080"}, wantIs: ErrAuthRequired, wantErr: "not loopback"},
		{name: "all interfaces with token", cfg: config.HTTP{AuthToken: goodTok}, opts: Options{Addr: anyAddr}, wantAuth: true},
		{name: "all interfaces with jwt", cfg: jwt, opts: Options{Addr: anyAddr}, wantAuth: true},
		{name: "issuer without jwks", cfg: config.HTTP{JWTIssuer: "https://i"}, opts: Options{Addr: loopAddr}, wantErr: "jwt_issuer and gateway.http.jwks_url go together"},
		{name: "bad address", opts: Options{Addr: "8080"}, wantErr: "want host:port"},
		{name: "missing address", wantErr: "want host:port"},
		{name: "base URL with path", opts: Options{Addr: loopAddr, BaseURL: "https://kiln.example/mcp"}, wantErr: "want scheme://host"},
		{name: "base URL not http", opts: Options{Addr: loopAddr, BaseURL: "ftp://kiln.example"}, wantErr: "want scheme://host"},
		{name: "base URL ok", opts: Options{Addr: loopAddr, BaseURL: "https://kiln.example/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.cfg, tt.opts)
			if tt.wantErr == "" && tt.wantIs == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if g.AuthRequired() != tt.wantAuth {
					t.Errorf("AuthRequired = %v, want %v", g.AuthRequired(), tt.wantAuth)
				}
				return
			}
			if err == nil {
				t.Fatal("New succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

func TestHostCheck(t *testing.T) {
	local := func(ip string) context.Context {
		return context.WithValue(context.Background(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080})
	}
	tests := []struct {
		name  string
		addr  string
		hosts []string
		host  string
		ctx   context.Context
		want  int
	}{
		{name: "localhost", addr: loopAddr, host: "localhost:8080", want: 200},
		{name: "localhost other port", addr: loopAddr, host: "localhost:9", want: 200},
		{name: "localhost no port", addr: loopAddr, host: "LOCALHOST", want: 200},
		{name: "localhost trailing dot", addr: loopAddr, host: "localhost.:8080", want: 200},
		{name: "127.0.0.1", addr: loopAddr, host: "127.0.0.1:8080", want: 200},
		{name: "127.1.2.3", addr: loopAddr, host: "127.1.2.3", want: 200},
		{name: "ipv6 loopback", addr: loopAddr, host: "[::1]:8080", want: 200},
		{name: "ipv6 loopback no port", addr: loopAddr, host: "[::1]", want: 200},
		{name: "rebinding name", addr: loopAddr, host: "evil.example:8080", want: 421},
		{name: "localhost subdomain", addr: loopAddr, host: "localhost.evil.example", want: 421},
		{name: "empty", addr: loopAddr, host: "", want: 421},
		{name: "other IP", addr: loopAddr, host: "10.0.0.1:8080", want: 421},
		{name: "bound IP", addr: "10.0.0.5:8080", host: "10.0.0.5:8080", want: 200},
		{name: "not the bound IP", addr: "10.0.0.5:8080", host: "10.0.0.6:8080", want: 421},
		{name: "allowed name any port", addr: anyAddr, hosts: []string{"Kiln.Internal"}, host: "kiln.internal:1234", want: 200},
		{name: "allowed host:port", addr: anyAddr, hosts: []string{"kiln.internal:8080"}, host: "kiln.internal:8080", want: 200},
		{name: "allowed host:port other port", addr: anyAddr, hosts: []string{"kiln.internal:8080"}, host: "kiln.internal:9090", want: 421},
		{name: "any: connection IP", addr: anyAddr, host: "192.168.1.5:8080", ctx: local("192.168.1.5"), want: 200},
		{name: "any: not connection IP", addr: anyAddr, host: "192.168.1.6:8080", ctx: local("192.168.1.5"), want: 421},
		{name: "any: name", addr: anyAddr, host: "evil.example", ctx: local("192.168.1.5"), want: 421},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, config.HTTP{AuthToken: goodTok, AllowedHosts: tt.hosts}, Options{Addr: tt.addr})
			r := req("GET", "/mcp", "", "Authorization", "Bearer "+goodTok)
			r.Host = tt.host
			if tt.ctx != nil {
				r = r.WithContext(tt.ctx)
			}
			w := serve(g.Wrap(newFakeMCP()), r)
			expectStatus(t, w, tt.want)
			if tt.want == 421 && !strings.Contains(w.Body.String(), "gateway.http.allowed_hosts") {
				t.Errorf("421 body %q does not name gateway.http.allowed_hosts", w.Body.String())
			}
		})
	}
}

func TestOriginCheck(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		origins []string // request Origin headers
		hdr     []string // more request headers
		want    int
		acao    string // Access-Control-Allow-Origin
	}{
		{name: "no origin", method: "GET", want: 200},
		{name: "loopback origin", method: "GET", origins: []string{"http://localhost:6274"}, want: 200, acao: "http://localhost:6274"},
		{name: "loopback IP origin", method: "GET", origins: []string{"https://127.0.0.1"}, want: 200, acao: "https://127.0.0.1"},
		{name: "configured origin", method: "GET", origins: []string{"https://APP.example.com"}, want: 200, acao: "https://APP.example.com"},
		{name: "foreign origin", method: "GET", origins: []string{"https://evil.example"}, want: 403},
		{name: "origin with loopback-looking name", method: "GET", origins: []string{"http://localhost.evil.example"}, want: 403},
		{name: "null origin", method: "GET", origins: []string{"null"}, want: 403},
		{name: "non-http origin", method: "GET", origins: []string{"file://localhost"}, want: 403},
		{name: "two origins", method: "GET", origins: []string{"http://localhost", "https://evil.example"}, want: 403},
		{name: "preflight skips auth", method: "OPTIONS", origins: []string{"http://localhost:6274"}, hdr: []string{"Access-Control-Request-Method", "POST"}, want: 204, acao: "http://localhost:6274"},
		{name: "preflight foreign", method: "OPTIONS", origins: []string{"https://evil.example"}, hdr: []string{"Access-Control-Request-Method", "POST"}, want: 403},
		{name: "plain OPTIONS needs auth", method: "OPTIONS", origins: []string{"http://localhost"}, want: 401, acao: "http://localhost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, config.HTTP{AuthToken: goodTok, AllowedOrigins: []string{"https://app.example.com/"}}, Options{})
			hdr := tt.hdr
			if tt.want != 401 && tt.method != "OPTIONS" {
				hdr = append(hdr, "Authorization", "Bearer "+goodTok)
			}
			r := req(tt.method, "/mcp", "", hdr...)
			for _, o := range tt.origins {
				r.Header.Add("Origin", o)
			}
			w := serve(g.Wrap(newFakeMCP()), r)
			expectStatus(t, w, tt.want)
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != tt.acao {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.acao)
			}
			if tt.want == 204 && !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
				t.Errorf("preflight Allow-Headers %q lacks Authorization", w.Header().Get("Access-Control-Allow-Headers"))
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	jwtCfg := config.HTTP{JWTIssuer: "https://issuer.example", JWKSURL: "https://issuer.example/jwks"}
	tests := []struct {
		name   string
		cfg    config.HTTP
		opts   Options
		path   string
		host   string
		method string
		want   string // JSON body; "" when not 200
		status int
	}{
		{name: "token only", cfg: config.HTTP{AuthToken: goodTok}, path: metadataPath, host: "127.0.0.1:8080",
			want: `{"resource":"http://127.0.0.1:8080","bearer_methods_supported":["header"]}`},
		{name: "jwt", cfg: jwtCfg, path: metadataPath, host: "localhost:8080",
			want: `{"resource":"http://localhost:8080","authorization_servers":["https://issuer.example"],"bearer_methods_supported":["header"]}`},
		{name: "path suffixed", cfg: jwtCfg, path: metadataPath + "/mcp", host: "localhost:8080",
			want: `{"resource":"http://localhost:8080/mcp","authorization_servers":["https://issuer.example"],"bearer_methods_supported":["header"]}`},
		{name: "base URL", cfg: jwtCfg, opts: Options{BaseURL: "https://kiln.example.com/"}, path: metadataPath, host: "localhost",
			want: `{"resource":"https://kiln.example.com","authorization_servers":["https://issuer.example"],"bearer_methods_supported":["header"]}`},
		{name: "no auth configured", path: metadataPath, host: "localhost",
			want: `{"resource":"http://localhost","bearer_methods_supported":["header"]}`},
		{name: "post", cfg: jwtCfg, path: metadataPath, host: "localhost", method: "POST", status: 405},
		{name: "other well-known needs auth", cfg: jwtCfg, path: "/.well-known/oauth-authorization-server", host: "localhost", status: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, tt.cfg, tt.opts)
			h := newFakeMCP()
			r := req(cmpOr(tt.method, "GET"), tt.path, "")
			r.Host = tt.host
			w := serve(g.Wrap(h), r)
			expectStatus(t, w, cmpOr(tt.status, 200))
			if tt.want == "" {
				return
			}
			if got := w.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if diff := cmp.Diff(tt.want, strings.TrimSpace(w.Body.String())); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if h.calls.Load() != 0 {
				t.Error("metadata request reached the MCP handler")
			}
		})
	}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

func TestBearerToken(t *testing.T) {
	const challenge = `Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource"`
	tests := []struct {
		name string
		auth []string
		want int
		www  string
	}{
		{name: "good", auth: []string{"Bearer " + goodTok}, want: 200},
		{name: "scheme case", auth: []string{"bEaReR " + goodTok}, want: 200},
		{name: "extra spaces", auth: []string{"Bearer   " + goodTok}, want: 200},
		{name: "none", want: 401, www: challenge},
		{name: "wrong", auth: []string{"Bearer nope"}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "prefix", auth: []string{"Bearer " + goodTok[:len(goodTok)-1]}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "longer", auth: []string{"Bearer " + goodTok + "x"}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "trailing space", auth: []string{"Bearer " + goodTok + " "}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "basic", auth: []string{"Basic " + goodTok}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "no token", auth: []string{"Bearer"}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "empty header", auth: []string{""}, want: 401, www: challenge + `, error="invalid_token"`},
		{name: "two headers", auth: []string{"Bearer " + goodTok, "Bearer " + goodTok}, want: 401, www: challenge + `, error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, config.HTTP{AuthToken: goodTok}, Options{})
			h := newFakeMCP()
			r := req("POST", "/mcp", `{}`)
			for _, a := range tt.auth {
				r.Header.Add("Authorization", a)
			}
			w := serve(g.Wrap(h), r)
			expectStatus(t, w, tt.want)
			if got := w.Header().Get("WWW-Authenticate"); got != tt.www {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.www)
			}
			if tt.want == 401 {
				if h.calls.Load() != 0 {
					t.Error("unauthorized request reached the handler")
				}
				return
			}
			if got := h.lastAuth.Load(); got != "" {
				t.Errorf("handler saw Authorization %q, want it stripped", got)
			}
		})
	}
}

func TestLoopbackWithoutAuth(t *testing.T) {
	g := newGuard(t, config.HTTP{}, Options{Addr: "127.0.0.1:0"})
	for _, target := range []string{"/mcp", "/sse", "/message?sessionId=x"} {
		w := serve(g.Wrap(newFakeMCP()), req("GET", target, ""))
		expectStatus(t, w, 200)
	}
	// The other checks still apply.
	r := req("GET", "/mcp", "", "Origin", "https://evil.example")
	expectStatus(t, serve(g.Wrap(newFakeMCP()), r), 403)
}

func TestLegacySSEGuarded(t *testing.T) {
	g := newGuard(t, config.HTTP{AuthToken: goodTok}, Options{})
	for _, target := range []string{"/sse", "/message?sessionId=abc", "/nope"} {
		t.Run(target, func(t *testing.T) {
			expectStatus(t, serve(g.Wrap(newFakeMCP()), req("GET", target, "")), 401)
			r := req("GET", target, "", "Origin", "https://evil.example", "Authorization", "Bearer "+goodTok)
			expectStatus(t, serve(g.Wrap(newFakeMCP()), r), 403)
			r = req("GET", target, "", "Authorization", "Bearer "+goodTok)
			r.Host = "evil.example"
			expectStatus(t, serve(g.Wrap(newFakeMCP()), r), 421)
			r = req("GET", target, "", "Authorization", "Bearer "+goodTok)
			expectStatus(t, serve(g.Wrap(newFakeMCP()), r), 200)
		})
	}
}

func TestTokenMatches(t *testing.T) {
	g := newGuard(t, config.HTTP{AuthToken: goodTok}, Options{})
	for tok, want := range map[string]bool{
		goodTok:                  true,
		"":                       false,
		goodTok[:5]:              false,
		goodTok + goodTok:        false,
		strings.ToUpper(goodTok): false,
		"s3cret-token-valuf":     false,
	} {
		if got := g.tokenMatches(tok); got != want {
			t.Errorf("tokenMatches(%q) = %v, want %v", tok, got, want)
		}
	}
	jwtOnly := newGuard(t, config.HTTP{JWTIssuer: "https://i", JWKSURL: "https://i/jwks"}, Options{})
	if jwtOnly.tokenMatches("") {
		t.Error("tokenMatches with no configured token accepted the empty token")
	}
}

func TestParseBearer(t *testing.T) {
	tests := []struct {
		in          []string
		tok         string
		present, ok bool
	}{
		{in: nil},
		{in: []string{"Bearer abc.DEF-_~+/=="}, tok: "abc.DEF-_~+/==", present: true, ok: true},
		{in: []string{"Bearer a=b"}, present: true},
		{in: []string{"Bearer ="}, present: true},
		{in: []string{"Bearer a\tb"}, present: true},
		{in: []string{"Bearer " + strings.Repeat("a", maxTokenLen+1)}, present: true},
		{in: []string{"Token abc"}, present: true},
	}
	for _, tt := range tests {
		tok, present, ok := parseBearer(tt.in)
		if tok != tt.tok || present != tt.present || ok != tt.ok {
			t.Errorf("parseBearer(%.40q) = %q, %v, %v; want %q, %v, %v", tt.in, tok, present, ok, tt.tok, tt.present, tt.ok)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	const max = 64
	tests := []struct {
		name    string
		body    string
		chunked bool // hide the length so only reading finds the excess
		handler http.Handler
		want    int
	}{
		{name: "at limit", body: strings.Repeat("a", max), want: 200},
		{name: "declared over", body: strings.Repeat("a", max+1), want: 413},
		{name: "chunked over, handler answers 400", body: strings.Repeat("a", 4*max), chunked: true, want: 413},
		{name: "chunked under", body: strings.Repeat("a", max-1), chunked: true, want: 200},
		{name: "chunked over, handler writes nothing", body: strings.Repeat("a", 4*max), chunked: true, want: 413,
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body) })},
		{name: "chunked over, handler writes body only", body: strings.Repeat("a", 4*max), chunked: true, want: 413,
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err := io.ReadAll(r.Body)
				_, _ = fmt.Fprintf(w, "error: %v", err)
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, config.HTTP{MaxBody: max}, Options{})
			h := tt.handler
			if h == nil {
				h = newFakeMCP()
			}
			r := req("POST", "/mcp", tt.body)
			if tt.chunked {
				r.ContentLength = -1
				r.Body = io.NopCloser(strings.NewReader(tt.body))
			}
			w := serve(g.Wrap(h), r)
			expectStatus(t, w, tt.want)
			if tt.want != 413 {
				return
			}
			var got struct {
				JSONRPC string
				ID      any
				Error   struct {
					Code    int
					Message string
				}
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("413 body %q is not JSON: %v", w.Body.String(), err)
			}
			if got.JSONRPC != "2.0" || got.ID != nil || got.Error.Code != -32600 || !strings.Contains(got.Error.Message, "gateway.http.max_body") {
				t.Errorf("413 body = %+v", got)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

// TestBodyLimitDefault checks a zero max_body still limits.
func TestBodyLimitDefault(t *testing.T) {
	g := newGuard(t, config.HTTP{}, Options{})
	r := req("POST", "/mcp", "{}")
	r.ContentLength = DefaultMaxBody + 1
	expectStatus(t, serve(g.Wrap(newFakeMCP()), r), 413)
}

// TestRecorderStreams checks the wrapper keeps what SSE needs.
func TestRecorderStreams(t *testing.T) {
	g := newGuard(t, config.HTTP{}, Options{})
	var flushed bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, isFlusher := w.(http.Flusher)
		flushed = isFlusher && http.NewResponseController(w).Flush() == nil
	})
	w := serve(g.Wrap(h), req("GET", "/sse", ""))
	if !flushed || !w.Flushed {
		t.Errorf("flush through guard: handler %v, recorder %v", flushed, w.Flushed)
	}
}
