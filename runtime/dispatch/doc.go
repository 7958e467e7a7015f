// Package dispatch routes tool calls to backend connections and keeps the
// backends up. Each backend has a supervisor: it connects in the background
// (so discovery answers from the compiled registry at once), notices a dead
// process at once, restarts it with backoff under a cap per window, probes
// its health and opens a circuit when probes fail. Calls are validated
// against the recorded schema before anything leaves kiln, bounded by the
// backend's timeout and concurrency limit, and canceled at the backend when
// the caller gives up.
//
// Lifecycle: New → Start → CallTool from any goroutine (AddBackend,
// RemoveBackend and Reload while running) → Close.
package dispatch
