package telemetry

import (
	"context"
	"errors"

	"github.com/kilnmcp/kiln/runtime/sandbox"
)

// Runner runs tier-3 programs; *sandbox.Sandbox (chain.Sandbox) is one.
type Runner interface {
	Run(ctx context.Context, code string, opts sandbox.RunOptions) (*sandbox.Outcome, error)
}

// Sandbox wraps next so every run is counted by outcome and limit.
func (t *Telemetry) Sandbox(next Runner) Runner { return &runner{t: t, next: next} }

type runner struct {
	t    *Telemetry
	next Runner
}

func (r *runner) Run(ctx context.Context, code string, opts sandbox.RunOptions) (*sandbox.Outcome, error) {
	out, err := r.next.Run(ctx, code, opts)
	cause := err
	if err == nil && out != nil && out.IsError {
		cause = out.Cause
		if cause == nil {
			cause = errors.New("")
		}
	}
	o, limit := sandboxOutcome(cause)
	r.t.Metrics.SandboxRun(o, limit)
	if out != nil && out.Refused > 0 {
		// max_calls turns calls away without ending the run: count it
		// as a hit of its own even when the script caught the error.
		r.t.Metrics.LimitHit("max_calls")
	}
	return out, err
}

// sandboxOutcomes names the sandbox's sentinels; the limit column is set
// for those that mean a limit stopped the run.
var sandboxOutcomes = []struct {
	err         error
	name, limit string
}{
	{sandbox.ErrTimeout, "timeout", "timeout"},
	{sandbox.ErrMemory, "memory", "memory"},
	{sandbox.ErrStalled, "stalled", "stalled"},
	{sandbox.ErrBusy, "busy", "busy"},
	{sandbox.ErrCanceled, "canceled", ""},
	{sandbox.ErrSyntax, "syntax", ""},
	{sandbox.ErrThrown, "thrown", ""},
	{sandbox.ErrResult, "result", ""},
	{sandbox.ErrInternal, "internal", ""},
}

func sandboxOutcome(err error) (outcome, limit string) {
	if err == nil {
		return "ok", ""
	}
	for _, o := range sandboxOutcomes {
		if errors.Is(err, o.err) {
			return o.name, o.limit
		}
	}
	return "error", ""
}
