// Package tests holds kiln's end-to-end tests: they build or take the real
// binaries, start `kiln serve` on the default config against the official
// reference MCP servers, and drive it with real MCP clients (mcp-go and the
// official go-sdk) over stdio, streamable HTTP and legacy SSE. They run with
// `make e2e` (build tag e2e). Nothing imports this package.
package tests
