// Package emit is kiln-gen's second phase: a pure, offline and deterministic
// function from manifests/ to generated/.
//
// For every backend it writes generated/<backend>/<backend>.gen.go: the
// recorded manifest as a Go literal, a Register function, and per tool an
// argument type derived from the tool's input schema and a typed call
// function that goes through a toolcall.Caller. Next to them it writes
// generated/kiln.gen.go (RegisterAll and Backends), the JS bridge preamble
// (generated/bridge) and the frozen search index (generated/searchindex).
//
// Every Go identifier comes from the one resolver in names.go; every runtime
// symbol comes from gen/runtimeapi.go. Maps are sorted before emitting, and
// nothing reads the clock or the network, so two runs give identical bytes.
package emit
