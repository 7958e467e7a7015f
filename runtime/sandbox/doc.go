// Package sandbox runs call_tool_chain scripts (tier 3) on dop251/goja. It
// is the only package that imports goja and esbuild, and it exports none
// of their types.
//
// A script is TypeScript or JavaScript: a body with top-level await and
// return, or a module exporting `main` (default or named). esbuild
// transpiles it in-process; plain JS that goja parses as is skips esbuild.
// Each Run gets a fresh runtime that has run, in order, the hardening
// script (harden.js) and the bridge preamble compiled once by New — a few
// such runtimes are prepared ahead, off the request path, and each serves
// exactly one run — then any dynamic preamble for backends registered at
// run time, then the script. Backend tools are real async calls:
// __kiln_call starts a goroutine per call on the Caller and the run's event
// loop settles the promise when it returns, so Promise.all overlaps calls.
//
// goja has no heap limit and cannot interrupt native code, so every limit
// is enforced before the step that would break it:
//
//   - timeout: rt.Interrupt for running JS, the event loop's select for a
//     script parked in await, context cancellation for backend calls;
//   - memory: a watchdog samples the live heap (runtime/metrics) and
//     interrupts the runs executing JS when the heap passes the sum of
//     their budgets; builtins that allocate or recurse in one native step
//     (repeat, padStart, join, flat, replace, JSON, iteration of sparse
//     lengths, bind chains…) are capped in harden.js or reimplemented in Go
//     with a cap (jsonenc.go); a parser bomb is refused by a linear
//     pre-scan of the code (shape.go) before esbuild or goja recurse on it;
//   - regular expressions: regexp2's match timeout, surfaced as an error;
//   - recursion: goja's call-stack limit;
//   - concurrency: a semaphore whose slot is held until the run's goroutine
//     has really finished, so runs stuck in native code cannot pile up.
//
// None of this bounds native work inside goja (a string doubled in a loop,
// a huge sort): the process does. So kiln serve runs scripts through a Pool
// of worker processes (ServeWorker, the hidden `kiln sandbox-worker`), each
// an in-process Sandbox running one script at a time under a kernel memory
// limit (cgroup v2 memory.max, else RLIMIT_DATA with RLIMIT_AS behind it;
// isolation_linux.go) and
// killed by the host at its deadline plus killGrace. The host and a worker
// speak length-prefixed JSON frames over the worker's stdin and stdout
// (wire.go); tool calls come back to the host's Caller. The in-process
// Sandbox stays for tests and fuzzing.
//
// Lifecycle: New (compiles the preamble, prepares a runtime) → Run from
// any number of goroutines. A Sandbox needs no Close. NewPool (starts one
// worker) → Run → Close (kills the workers).
package sandbox
