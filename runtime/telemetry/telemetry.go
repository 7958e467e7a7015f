package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Telemetry records metrics and traces for one gateway. Lifecycle:
// New → hand its hooks and decorators to the other packages → Shutdown,
// which flushes spans still batched.
type Telemetry struct {
	// Metrics is nil when metrics are off; its methods accept that.
	Metrics *Metrics
	// Health, when set, counts calls in flight so a drain can wait for
	// them.
	Health *Health
	tracer trace.Tracer
	tp     *sdktrace.TracerProvider
	lp     *sdklog.LoggerProvider
}

// New returns telemetry with m for metrics (nil for none) and traces as
// the OTEL_* variables ask: a bad value is an error naming the variable.
// Export failures go to log (nil discards), not to the SDK's default of
// the standard logger, which would bypass kiln's scrubbing writer.
func New(ctx context.Context, version string, m *Metrics, log *slog.Logger) (*Telemetry, error) {
	tp, err := startTracing(ctx, version)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lp, err := startLogs(ctx, version)
	if err != nil {
		return nil, err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("could not export traces or log records", "err", err) }))
	t := &Telemetry{Metrics: m, tracer: noop.NewTracerProvider().Tracer(""), tp: tp, lp: lp}
	if tp != nil {
		t.tracer = tp.Tracer("github.com/kilnmcp/kiln")
	}
	return t, nil
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t.tp != nil }

// Shutdown flushes batched spans and log records within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.lp != nil {
		errs = append(errs, t.lp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

type tierKey struct{}

// TierOf names the call_tool_chain tier ctx runs in ("1", "2" or "3"), or
// "direct" for a backend tool a client called by its exposed name: the
// label metrics and the audit log use.
func TierOf(ctx context.Context) string {
	tier, _ := ctx.Value(tierKey{}).(int)
	return tierLabel(tier)
}

// StartTool opens a client request to a meta-tool: the root span of its
// trace, a child of the client's own when it sent a W3C traceparent (in
// the request's _meta). It is server.Options.Telemetry's StartTool.
func (t *Telemetry) StartTool(ctx context.Context, tool, traceparent, tracestate string) (context.Context, func(isError bool)) {
	start := time.Now()
	ctx, end := t.startRequest(ctx, tool, traceparent, tracestate)
	return ctx, func(isError bool) {
		end(isError)
		t.Metrics.MetaTool(tool, isError, time.Since(start))
	}
}

// StartDirect opens a client request to a backend tool exposed under its
// own name (direct and hybrid exposure): the same root span as a
// meta-tool's, so a trace has one shape whichever way the tool was called.
// Its calls are counted by the backend-call series (tier "direct"), not
// as meta-tool calls.
func (t *Telemetry) StartDirect(ctx context.Context, tool, traceparent, tracestate string) (context.Context, func(isError bool)) {
	return t.startRequest(ctx, tool, traceparent, tracestate)
}

func (t *Telemetry) startRequest(ctx context.Context, tool, traceparent, tracestate string) (context.Context, func(isError bool)) {
	done := t.begin()
	ctx = remoteParent(ctx, traceparent, tracestate)
	if t.tp == nil {
		// Nothing exports spans: the no-op span would only carry the
		// client's span context on, which ctx already does, and its
		// attributes cost allocations on every call.
		return ctx, func(bool) { done() }
	}
	ctx, span := t.tracer.Start(ctx, tool, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool)))
	return ctx, func(isError bool) {
		if isError {
			span.SetStatus(codes.Error, "tool returned isError")
		}
		span.End()
		done()
	}
}

func (t *Telemetry) begin() func() {
	if t.Health == nil {
		return func() {}
	}
	return t.Health.Begin()
}

// Sessions moves the open-session gauge; server.Options.Telemetry's
// Sessions.
func (t *Telemetry) Sessions(delta int) { t.Metrics.Sessions(delta) }

// Searched records one tool search and how long it took; the server calls
// it around every search of the catalog.
func (t *Telemetry) Searched(took time.Duration) { t.Metrics.Search(took) }

// EnterTier marks ctx as running call_tool_chain at tier (1, 2 or 3) and
// opens its span; chain.Options.OnTier calls it.
func (t *Telemetry) EnterTier(ctx context.Context, tier int) (context.Context, func()) {
	ctx = context.WithValue(ctx, tierKey{}, tier)
	if t.tp == nil {
		return ctx, endNothing
	}
	ctx, span := t.tracer.Start(ctx, "tier "+strconv.Itoa(tier), trace.WithAttributes(attribute.Int("kiln.tier", tier)))
	return ctx, func() { span.End() }
}

// BackendEvent counts a supervision event; dispatch.Options.OnEvent.
func (t *Telemetry) BackendEvent(backend, event string) { t.Metrics.BackendEvent(backend, event) }

// Caller wraps next (the dispatcher) so every backend call is counted,
// timed and traced, and carries the trace context to the backend.
func (t *Telemetry) Caller(next toolcall.Caller) toolcall.Caller {
	return &caller{t: t, next: next}
}

type caller struct {
	t    *Telemetry
	next toolcall.Caller
}

func (c *caller) CallTool(ctx context.Context, backendName, tool string, args json.RawMessage) (*toolcall.Result, error) {
	tier, _ := ctx.Value(tierKey{}).(int)
	defer c.t.begin()()
	start := time.Now()
	if c.t.tp == nil {
		// No span of kiln's own (see startRequest); the client's trace
		// context still reaches the backend.
		res, err := c.next.CallTool(backend.WithPropagation(ctx, injected(ctx)), backendName, tool, args)
		c.t.Metrics.ToolCall(backendName, tool, tierLabel(tier), outcome(res, err), time.Since(start))
		return res, err
	}
	ctx, span := c.t.tracer.Start(ctx, backendName+"."+tool, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("kiln.backend", backendName), attribute.String("gen_ai.tool.name", tool)))
	res, err := c.next.CallTool(backend.WithPropagation(ctx, injected(ctx)), backendName, tool, args)
	out := outcome(res, err)
	if out != "ok" {
		span.SetStatus(codes.Error, out)
	}
	span.SetAttributes(attribute.String("kiln.outcome", out))
	span.End()
	c.t.Metrics.ToolCall(backendName, tool, tierLabel(tier), out, time.Since(start))
	return res, err
}

// endNothing ends a span never started.
func endNothing() {}

// outcome matches dispatch's kiln://calls outcomes.
func outcome(res *toolcall.Result, err error) string {
	switch {
	case err != nil:
		if c := dispatch.CodeOf(err); c != "" {
			return string(c)
		}
		return string(dispatch.CodeBackend)
	case res != nil && res.IsError:
		return "tool_error"
	}
	return "ok"
}
