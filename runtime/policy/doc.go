// Package policy decides who may use what: the rules of kiln.yaml's
// policies list, compiled once, matched against the identity a call's
// context carries (toolcall.Identity) and the tool it names.
//
// Semantics: rules are read in order and the first rule that decides a
// (identity, tool) pair wins. A rule decides when its match selects the
// identity, its annotations condition (if any) holds for the tool, and the
// tool's ID (backend.tool) matches one of its deny globs (denied) or else
// one of its allow globs (allowed); a rule whose globs name neither does
// not decide and the next one is read. When no rule decides, the tool is
// denied, so a policy list is an allow list that ends where it ends; a
// list with no allow or deny rule at all (only limits) leaves access open.
// No policies at all: everything is allowed, as before policies existed.
//
// Limits (rate, burst, max_in_flight) use the same matching: the first
// rule whose match selects the identity and that sets a limit gives the
// identity its limits, counted per identity (kind and subject) in this
// process, or across the fleet through a Counter (runtime/state's Redis
// one when gateway.state_url is set).
//
// Enforcement has two halves. Guard wraps the gateway's toolcall.Caller,
// so every call of every tier (a tier-3 program's calls come back through
// the same Caller with the run's context, hence its session's identity)
// and every directly exposed tool is decided at call time, refused with a
// *dispatch.Error of CodeDenied or CodeRateLimited. Listings (search,
// list_tools_meta, tool_info, tools/list, the sandbox's bound names) ask
// Set.Allows so a denied tool does not exist for the identity.
//
// Lifecycle: Compile(cfg.Policies) once per config → NewGuard(next,
// resolve, counter) → Guard.Store on reload. A Set is immutable; a Guard
// is safe for concurrent use.
package policy
