// Package pipeline shrinks what a tool call returns before the model reads
// it. call_tool_chain runs every tier-1, tier-2 and tier-3 result through
// Result; everything else in kiln passes results through untouched.
//
// The stages run in a fixed order; each is toggled by Options and on in
// DefaultOptions, except the hard cap, which always applies:
//
//	raw → intent filter → JSON auto-chunk → smart truncation → hard cap → size footer
//
// All sizes are bytes of UTF-8, not runes: the transports, the footer and
// kiln://stats count bytes, the cap of Gatemini's call_tool_chain that kiln
// was specified from (seed 000 of the specification, which cuts with Rust's
// floor_char_boundary) counts bytes, and a cap of N bytes is also a cap of N characters. Every
// cut lands on a rune boundary and, as far as a table-free check can tell,
// on a grapheme boundary (combining marks, ZWJ sequences, variation
// selectors, emoji modifiers, flag pairs and CRLF stay whole).
//
// Two invariants hold for every input and every Options, and FuzzText checks
// them: the output is never longer than the input, and never longer than
// MaxOutputSize, footer and notes included (the footer allowance is zero);
// valid UTF-8 in gives valid UTF-8 out.
//
// Only text content blocks are processed. Images, audio, resources,
// structuredContent, _meta and isError pass through as the backend sent them.
package pipeline
