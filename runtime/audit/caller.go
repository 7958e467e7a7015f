package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Scope reads what the front door and the tiers put in a call's context:
// the MCP session, the profile and the tier ("1", "2", "3" or "direct").
// The packages that own those values supply it.
type Scope func(ctx context.Context) (session, profile, tier string)

// Caller wraps next so every call, refused or not, is one Record in l.
// It sits outside the policy guard so refusals are recorded too.
func (l *Log) Caller(next toolcall.Caller, scope Scope) toolcall.Caller {
	if l == nil {
		return next
	}
	return &caller{l: l, next: next, scope: scope}
}

type caller struct {
	l     *Log
	next  toolcall.Caller
	scope Scope
}

func (c *caller) CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	start := time.Now()
	res, err := c.next.CallTool(ctx, backend, tool, args)
	r := Record{Time: start, Event: EventCall, Tool: backend + "." + tool,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, ResultBytes: resultBytes(res)}
	r.Outcome, r.Code = Outcome(res, err)
	if id, ok := toolcall.IdentityFrom(ctx); ok {
		r.Identity = id.String()
	}
	if c.scope != nil {
		r.Session, r.Profile, r.Tier = c.scope(ctx)
	}
	// The caller may reuse its buffer once the call returns; the digest
	// is taken later, on the writer's goroutine.
	r.Args = append(json.RawMessage(nil), args...)
	if r.Args == nil {
		r.Args = json.RawMessage{}
	}
	c.l.Add(r)
	return res, err
}
