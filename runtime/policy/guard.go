package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Resolver finds a tool by the names a Caller is given (backend.tool, or
// an alias the registry knows); registry.Registry.Resolve behind it.
type Resolver func(backend, tool string) (Tool, bool)

// Counter counts an identity's calls against its limits: in this process
// (NewLocalCounter) or across a fleet (runtime/state's Redis counter).
type Counter interface {
	// Take spends one call from key's bucket of burst calls refilled at
	// rate per second, and returns 0, or how long until one is free
	// (nothing spent).
	Take(ctx context.Context, key string, rate float64, burst int) (wait time.Duration, err error)
	// Enter counts one call of key in flight unless max already are;
	// release ends it and must be called exactly once when ok.
	Enter(ctx context.Context, key string, max int) (release func(), ok bool, err error)
}

// Guard is a toolcall.Caller that decides every call by the identity its
// context carries before it reaches next.
type Guard struct {
	next    toolcall.Caller
	resolve Resolver
	counter Counter
	log     *slog.Logger
	set     atomic.Pointer[Set]
}

// NewGuard wraps next; counter nil counts in this process.
func NewGuard(next toolcall.Caller, set *Set, resolve Resolver, counter Counter, log *slog.Logger) *Guard {
	if counter == nil {
		counter = NewLocalCounter()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{next: next, resolve: resolve, counter: counter, log: log}
	g.set.Store(set)
	return g
}

// Store replaces the rules (a config reload); calls already decided run on.
func (g *Guard) Store(s *Set) { g.set.Store(s) }

// Set returns the rules in force; nil allows everything.
func (g *Guard) Set() *Set { return g.set.Load() }

// Allows reports whether ctx's identity may use t under the rules in
// force: the listings' check.
func (g *Guard) Allows(ctx context.Context, t Tool) bool {
	if p := ProfileFrom(ctx); p != nil && !p.Serves(t) {
		return false
	}
	s := g.set.Load()
	if !s.Active() {
		return true
	}
	id, _ := toolcall.IdentityFrom(ctx)
	return s.Allows(id, t)
}

// AllowsKey reports whether ctx's identity may use a backend resource or
// prompt (ResourceKey, PromptKey).
func (g *Guard) AllowsKey(ctx context.Context, key string) bool {
	s := g.set.Load()
	if !s.Active() {
		return true
	}
	id, _ := toolcall.IdentityFrom(ctx)
	return s.AllowsKey(id, key)
}

// CallTool refuses a call ctx's identity may not make (CodeDenied) or that
// is over its limits (CodeRateLimited), and passes the rest to next.
func (g *Guard) CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	s := g.set.Load()
	prof := ProfileFrom(ctx)
	if s == nil && prof == nil {
		return g.next.CallTool(ctx, backend, tool, args)
	}
	id, _ := toolcall.IdentityFrom(ctx)
	if s.Active() || prof != nil {
		t, ok := g.resolve(backend, tool)
		if !ok {
			// The dispatcher may still find it once its backend has
			// listed; the name alone decides meanwhile.
			t = Tool{Backend: backend, Name: tool, Unlisted: true}
		}
		if prof != nil && !prof.Serves(t) {
			return nil, outOfProfile(prof, t.Backend, t.Name)
		}
		if s.Active() && !s.Allows(id, t) {
			return nil, Denied(t.Backend, t.Name)
		}
	}
	if p, ok := s.limitsFor(id); ok {
		key := id.String()
		if p.MaxInFlight > 0 {
			release, ok, err := g.counter.Enter(ctx, key, p.MaxInFlight)
			switch {
			case err != nil:
				// Calls go on when the fleet's counter is unreachable: a
				// limit is a brake, not a gate, and kiln://health says so.
				g.log.Warn("max_in_flight not counted: counter unreachable", "identity", key, "err", err)
			case !ok:
				return nil, &dispatch.Error{Code: dispatch.CodeRateLimited, Backend: backend, Tool: tool,
					Message: fmt.Sprintf("%s.%s not started: you already have %d calls running, the most this gateway lets you run at once (max_in_flight). Retry once one of them has returned.", backend, tool, p.MaxInFlight)}
			default:
				defer release()
			}
		}
		if p.Rate > 0 {
			wait, err := g.counter.Take(ctx, key, p.Rate, p.Burst)
			switch {
			case err != nil:
				g.log.Warn("rate not counted: counter unreachable", "identity", key, "err", err)
			case wait > 0:
				return nil, &dispatch.Error{Code: dispatch.CodeRateLimited, Backend: backend, Tool: tool,
					Message: fmt.Sprintf("%s.%s not started: you are over this gateway's rate limit of %g calls per second (burst %d). Retry in %s.", backend, tool, p.Rate, p.Burst, roundUp(wait))}
			}
		}
	}
	return g.next.CallTool(ctx, backend, tool, args)
}

// Denied is the refusal of a tool the caller may not use. It names only
// what the caller asked for: not the rule, nor what else exists.
func Denied(backend, tool string) *dispatch.Error {
	return &dispatch.Error{Code: dispatch.CodeDenied, Backend: backend, Tool: tool,
		Message: fmt.Sprintf("%s.%s is not available to you: this gateway's policy does not let you use it. Call search_tools to find the tools you may use instead.", backend, tool)}
}

// roundUp shows a wait to the next millisecond, never as 0s.
func roundUp(d time.Duration) time.Duration {
	r := d.Round(time.Millisecond)
	if r < d {
		r += time.Millisecond
	}
	return max(r, time.Millisecond)
}
