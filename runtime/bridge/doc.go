// Package bridge writes the JavaScript preamble that exposes backend tools to
// scripts run by call_tool_chain, and maps the identifiers it chose back to
// the original names.
//
// The preamble is plain ES2020 text, so the same bytes are embedded by
// kiln-gen emit (generated/bridge/preamble.js) and rebuilt at run time by the
// sandbox when register_manual changes the tool set. Backend and tool names
// are arbitrary strings, so they never appear in the preamble as code: they
// reach __kiln_call as JSON-escaped string literals, and the identifiers
// scripts use come from Ident plus a deterministic collision pass shared by
// Preamble and Lookup.
package bridge
