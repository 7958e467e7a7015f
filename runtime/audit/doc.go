// Package audit keeps the record of who called what: one JSON line per
// tool call (a policy refusal and a rate limit are calls too, with their
// outcome), registration, reload and drift event, written to
// gateway.audit.path and handed to an exporter (OpenTelemetry logs).
//
// The hot path only appends a Record to a pending batch under a mutex;
// a writer goroutine digests the arguments, encodes the batch, writes it
// with one write and fsyncs it, every FlushEvery or sooner when the batch
// fills. So a kill -9 loses at most the batch not yet written. The file
// is rotated by size (path.1 … path.Keep). A write that fails (a full
// disk) is cut back to the last whole line, kept for the next try and
// reported by Problem, which turns kiln://health degraded; calls go on.
//
// Lifecycle: Open → Add / Caller's calls from any goroutine → Close, which
// writes what is pending.
package audit
