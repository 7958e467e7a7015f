// Package chain implements call_tool_chain: it picks the cheapest tier that
// can run the submitted code — tier 1, the JSON call (jsoncall.go),
// dispatched directly; tier 2, the literal call (literal.go), a single
// TypeScript call normalized without a JS engine (jslit reads its
// literals); tier 3, the goja sandbox (engine.go) — and passes the result
// through the output pipeline.
// Every result records the tier that produced it in _meta["kiln/tier"].
package chain
