// Package telemetry is kiln's one room for operations signals: Prometheus
// metrics, OpenTelemetry traces and the health endpoints (/healthz,
// /readyz). Other packages never import it; they expose tiny hooks (a func
// or an interface in their Options) and cmd/kiln wires this package's
// implementations into them, or wraps their interfaces (toolcall.Caller,
// the searcher, the sandbox) with the decorators here.
//
// Label cardinality is bounded on purpose: a backend or tool label carries
// a name only when it was compiled in or configured at start; anything
// registered at run time is counted as "other", so register_manual cannot
// grow the series without limit.
package telemetry
