// Package lsp is a small Language Server Protocol client: JSON-RPC 2.0
// over a server's stdio with Content-Length framing, the handful of
// requests the workspace's navigation tools make, and the diagnostics the
// server publishes. It starts nothing itself: the workspace starts the
// server process confined like Bash and hands its pipes to NewConn.
//
// Lifecycle: NewConn → Initialize → requests and notifications
// (concurrently) → Shutdown, which sends shutdown and exit; Close ends
// the connection without them (the process is gone or being killed).
//
// Positions on the wire are UTF-16 code units, as LSP's default
// encoding says; UTF16Col and RuneCol convert them from and to the
// characters a model counts.
package lsp
