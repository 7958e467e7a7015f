// Package version reports the build's version, stamped by the Makefile with
// -ldflags "-X github.com/kilnmcp/kiln/runtime/version.stamp=…" so that
// both binaries of one build agree.
package version

import "runtime/debug"

var stamp string

// String returns the stamped version, else the module version go install
// recorded, else "dev".
func String() string {
	if stamp != "" {
		return stamp
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
