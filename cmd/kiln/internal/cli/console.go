package cli

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/console"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// consoleFeed carries the audit log's records and the backends' events
// to the console once it exists (it is built after the server).
type consoleFeed struct {
	console atomic.Pointer[console.Console]
}

// newConsoleFeed returns nil unless the console is on over HTTP.
func newConsoleFeed(cfg *config.Config, http bool) *consoleFeed {
	if !cfg.Gateway.Console.Enabled || !http {
		return nil
	}
	return &consoleFeed{}
}

func (f *consoleFeed) publish(r audit.Record) {
	if c := f.console.Load(); c != nil {
		c.Publish(console.Event{Time: r.Time, Replica: r.Replica, Kind: r.Event, Tool: r.Tool, Backend: r.Backend, Who: r.Identity,
			Session: r.Session, Tier: r.Tier, Outcome: r.Outcome, MS: r.DurationMS, Bytes: r.ResultBytes, Args: r.Args, Detail: r.Detail})
	}
}

// backendEvent puts a supervision event (restart, circuit_open) in the
// live log; it is not an audit record.
func (f *consoleFeed) backendEvent(backend, event string) {
	if f == nil {
		return
	}
	if c := f.console.Load(); c != nil {
		c.Publish(console.Event{Kind: "backend", Backend: backend, Detail: event})
	}
}

// startConsole builds the console over srv once the server exists.
func (f *consoleFeed) startConsole(cfg *config.Config, srv *server.Server, caller toolcall.Caller, guard *policy.Guard, resolve policy.Resolver,
	scrubber *scrub.Scrubber, replica string, log *slog.Logger) *console.Console {
	if f == nil {
		return nil
	}
	ws := map[string]string{}
	for _, b := range cfg.Backends {
		if b.Transport == config.TransportWorkspace && b.Enabled && b.Workspace != nil {
			ws[b.Name] = b.Workspace.Root
		}
	}
	allows := func(ctx context.Context, backend, tool string) bool {
		t, ok := resolve(backend, tool)
		if !ok {
			t = policy.Tool{Backend: backend, Name: tool, Unlisted: true}
		}
		return guard.Allows(ctx, t)
	}
	c := console.New(console.Options{Config: cfg.Gateway.Console, Source: srv, Caller: caller, Allows: allows, Scrub: scrubber.Result,
		ScrubText: scrubber.String, Workspaces: ws, Replica: replica, Logger: log})
	f.console.Store(c)
	return c
}

// withConsole serves the console's routes beside the front door's.
func withConsole(c *console.Console, open func(*httpauth.Guard, http.Handler) http.Handler) func(*httpauth.Guard, http.Handler) http.Handler {
	return func(g *httpauth.Guard, guarded http.Handler) http.Handler {
		h := open(g, guarded)
		if c == nil {
			return h
		}
		ch := c.Handler(g.Protect, g.AuthRequired())
		mux := http.NewServeMux()
		mux.Handle("/console/", ch)
		mux.Handle("/api/v1/", ch)
		mux.Handle("/", h)
		return mux
	}
}
