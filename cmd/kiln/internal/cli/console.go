package cli

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/console"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// recorders fans records out to the audit log and the console's live log.
type recorders []*audit.Log

func (rs recorders) Add(r audit.Record) {
	for _, l := range rs {
		l.Add(r)
	}
}

// Caller wraps next in every log's recorder.
func (rs recorders) Caller(next toolcall.Caller, scope audit.Scope) toolcall.Caller {
	for _, l := range rs {
		next = l.Caller(next, scope)
	}
	return next
}

func (rs recorders) Close() {
	for _, l := range rs {
		l.Close()
	}
}

// consoleFeed is the console's live log: a log with no file whose records
// reach the console once it exists (it is built after the server).
type consoleFeed struct {
	log     *audit.Log
	console atomic.Pointer[console.Console]
}

// openConsoleFeed returns nil unless the console is on over HTTP.
func openConsoleFeed(cfg *config.Config, http bool, replica string) (*consoleFeed, error) {
	if !cfg.Gateway.Console.Enabled || !http {
		return nil, nil
	}
	f := &consoleFeed{}
	l, err := audit.Open(audit.Options{Values: cfg.Gateway.Console.ShowValues, FlushEvery: 100 * time.Millisecond, Replica: replica,
		Emit: func(r audit.Record) { f.publish(r) }})
	if err != nil {
		return nil, err
	}
	f.log = l
	return f, nil
}

func (f *consoleFeed) publish(r audit.Record) {
	if c := f.console.Load(); c != nil {
		c.Publish(console.Event{Time: r.Time, Replica: r.Replica, Kind: r.Event, Tool: r.Tool, Backend: r.Backend, Who: r.Identity,
			Session: r.Session, Tier: r.Tier, Outcome: r.Outcome, MS: r.DurationMS, Bytes: r.ResultBytes, Args: r.Args, Detail: r.Detail})
	}
}

// backendEvent puts a backend's state change in the live log.
func (f *consoleFeed) backendEvent(backend, event string) {
	if f != nil {
		f.log.Add(audit.Record{Event: "backend", Backend: backend, Detail: event})
	}
}

// startConsole builds the console over srv once the server exists.
func (f *consoleFeed) startConsole(cfg *config.Config, srv *server.Server, caller toolcall.Caller, scrubber *scrub.Scrubber, replica string, log *slog.Logger) *console.Console {
	if f == nil {
		return nil
	}
	ws := map[string]string{}
	for _, b := range cfg.Backends {
		if b.Transport == config.TransportWorkspace && b.Enabled && b.Workspace != nil {
			ws[b.Name] = b.Workspace.Root
		}
	}
	c := console.New(console.Options{Config: cfg.Gateway.Console, Source: srv, Caller: caller, Scrub: scrubber.Result,
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
		ch := c.Handler(g.Protect)
		mux := http.NewServeMux()
		mux.Handle("/console/", ch)
		mux.Handle("/api/v1/", ch)
		mux.Handle("/", h)
		return mux
	}
}
