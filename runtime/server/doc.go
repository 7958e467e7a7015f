// Package server is kiln's MCP front door. It serves the meta-tools
// (search_tools, list_tools_meta, tool_info, get_required_keys_for_tool,
// call_tool_chain, register_manual, deregister_manual), the kiln://
// resources and templates, the discover / find_tool / backend_status
// prompts and argument completion, over stdio, streamable HTTP (/mcp) and
// legacy SSE (/sse + /message). It is the only package that imports the MCP
// server SDK.
//
// Everything it sends passes the secret scrubber; progress and log
// notifications from backends reach the client whose call caused them.
//
// Lifecycle: New → ServeStdio or Handler (one or the other, or both), or
// ServeConn once per connection of the kiln daemon → cancel the context to
// stop.
package server
