package backend

import "context"

type propagationKey struct{}

// WithPropagation returns a context whose backend requests carry fields
// (W3C trace context: traceparent, tracestate) as HTTP headers to HTTP and
// SSE backends and in the request's _meta for every backend, so a
// backend's own spans join the caller's trace.
func WithPropagation(ctx context.Context, fields map[string]string) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	return context.WithValue(ctx, propagationKey{}, fields)
}

// propagation returns the fields set by WithPropagation; it is the
// transports' header func.
func propagation(ctx context.Context) map[string]string {
	f, _ := ctx.Value(propagationKey{}).(map[string]string)
	return f
}
