package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// Source is what the console reads the gateway through: the MCP server's
// views for ctx's identity (*server.Server).
type Source interface {
	Resource(ctx context.Context, uri string) (any, error)
	SearchPeople(ctx context.Context, query string, limit int) []server.PeopleHit
	ToolSchema(ctx context.Context, id string) (json.RawMessage, bool)
	ToolDocs(ctx context.Context) string
}

// Options configure a Console.
type Options struct {
	Config config.Console
	Source Source
	// Caller runs a person's exec as the workspace's Bash tool, through
	// the gateway's policy and audit log.
	Caller toolcall.Caller
	// Scrub redacts secrets from a result and from text.
	Scrub     func(*toolcall.Result) *toolcall.Result
	ScrubText func(string) string
	// Workspaces are the workspace backends by name with their roots.
	Workspaces map[string]string
	// Replica names this kiln on every page and event.
	Replica string
	// Client fetches the OIDC provider's documents; nil: 10 s timeout.
	Client *http.Client
	Logger *slog.Logger
	Now    func() time.Time
}

// Console serves the human API and the console pages.
type Console struct {
	opts   Options
	log    *slog.Logger
	hub    *hub
	auth   *auth
	mu     sync.Mutex
	roots  map[string]*workspace.Root
	routes []string
}

// New builds the console; roots of workspaces that cannot be opened are
// left out of it and logged.
func New(opts Options) *Console {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Console{opts: opts, log: opts.Logger, hub: newHub(), roots: map[string]*workspace.Root{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o := opts.Config.OIDC; o != nil {
		c.auth = newAuth(*o, opts.Config.Allowed, opts.Client, opts.Now, c.log)
	}
	for name, dir := range opts.Workspaces {
		r, err := workspace.OpenRoot(dir)
		if err != nil {
			c.log.Warn("console: workspace not browsable", "backend", name, "err", err)
			continue
		}
		c.roots[name] = r
	}
	return c
}

// Publish adds e to the live log.
func (c *Console) Publish(e Event) {
	if c == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.opts.Now()
	}
	if e.Replica == "" {
		e.Replica = c.opts.Replica
	}
	if !c.opts.Config.ShowValues {
		e.Args = nil
	}
	c.hub.publish(e)
}

// Subscribers is how many event streams are open.
func (c *Console) Subscribers() int { return c.hub.subscribers() }

// Close ends every event stream and closes the workspace roots.
func (c *Console) Close() {
	c.hub.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.roots {
		r.Close()
	}
	c.roots = nil
}

func (c *Console) workspaceNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.roots))
	for n := range c.roots {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Console) root(name string) *workspace.Root {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots[name]
}

// Routes lists every pattern the console serves, for tests that check
// each one refuses an unauthenticated request.
func (c *Console) Routes() []string { return append([]string(nil), c.routes...) }

// Handler serves /console/ and /api/v1/. guard wraps what a browser
// session does not authenticate: the front door's bearer and JWT checks
// (or its loopback-only rule when no auth is configured).
func (c *Console) Handler(guard func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h http.HandlerFunc) {
		c.routes = append(c.routes, pattern)
		mux.Handle(pattern, c.authenticated(guard, h))
	}
	handle("GET /api/v1/backends", c.apiBackends)
	handle("GET /api/v1/backends/{name}", c.apiBackend)
	handle("GET /api/v1/tools", c.apiTools)
	handle("GET /api/v1/tools/{id}", c.apiTool)
	handle("GET /api/v1/events", c.apiEvents)
	handle("GET /api/v1/docs", c.apiDocs)
	handle("GET /api/v1/workspaces", c.apiWorkspaces)
	handle("GET /api/v1/workspaces/{name}/tree", c.apiTree)
	handle("GET /api/v1/workspaces/{name}/file", c.apiFile)
	handle("GET /api/v1/workspaces/{name}/download", c.apiDownload)
	handle("POST /api/v1/workspaces/{name}/exec", c.apiExec)
	handle("GET /console/{$}", c.pageOverview)
	handle("GET /console/backends/{name}", c.pageBackend)
	handle("GET /console/search", c.pageSearch)
	handle("GET /console/log", c.pageLog)
	handle("GET /console/workspaces/{name}", c.pageWorkspace)
	handle("POST /console/workspaces/{name}/exec", c.pageExec)
	// The login flow and the stylesheet are open: they carry nothing.
	// Logging out needs no check: it only clears the caller's own cookie.
	c.routes = append(c.routes, "GET /console/login", "GET /console/callback", "GET /console/assets/", "POST /console/logout")
	mux.HandleFunc("POST /console/logout", c.logout)
	mux.HandleFunc("GET /console/login", c.login)
	mux.HandleFunc("GET /console/callback", c.callback)
	mux.Handle("GET /console/assets/", http.StripPrefix("/console/assets/", http.FileServerFS(assetsFS())))
	return securityHeaders(mux)
}

// securityHeaders keeps the pages to their own origin: no framing, no
// scripts or styles but kiln's own, no referrer leaking paths.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}
