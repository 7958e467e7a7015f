// Package jslit reads and writes JavaScript literals without a JavaScript
// engine: a tokenizer for the literal subset of JS (identifiers, strings in
// both quotes with every escape, numbers in every radix, punctuators,
// comments and line terminators for ASI), ECMAScript number formatting, and
// a JSON re-encoder that mirrors JSON.stringify(JSON.parse(x)).
//
// call_tool_chain's tier 2 (the literal call, runtime/chain/literal.go) uses it to prove that a script is one plain
// tool call and to send exactly the bytes the sandbox would have sent. It
// refuses whatever it does not fully understand instead of guessing.
package jslit
