// Package server is kiln's MCP front door. It serves the seven meta-tools
// (search_tools, list_tools_meta, tool_info, get_required_keys_for_tool,
// call_tool_chain, register_manual, deregister_manual) over stdio,
// streamable HTTP (/mcp) and legacy SSE (/sse + /message). It is the only
// package that imports the MCP server SDK.
//
// Lifecycle: New → ServeStdio or Handler (one or the other, or both) →
// cancel the context to stop.
package server
