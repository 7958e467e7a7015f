// Package backend owns kiln's client connections to backend MCP servers:
// starting stdio processes (own process group, bounded stderr ring, pipes
// kiln reads and writes itself for tools/call, the SDK's transport for the
// rest),
// connecting to streamable HTTP and legacy SSE servers, listing what a
// backend offers and calling its tools. It is the only package that imports
// the MCP client SDK, so kiln-gen record and kiln serve connect identically.
//
// Lifecycle: Dial → Snapshot / CallTool (concurrently) → Close.
package backend
