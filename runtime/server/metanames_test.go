package server

import (
	"slices"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// TestMetaToolsFollowTheTable keeps the served meta-tools equal, in order,
// to toolcall's names, which the config reserves and the sandbox explains:
// a meta-tool added here and not there would be a backend name the config
// accepts.
func TestMetaToolsFollowTheTable(t *testing.T) {
	var served []string
	for _, mt := range metaTools {
		served = append(served, mt.name)
	}
	if want := toolcall.MetaToolNames(); !slices.Equal(served, want) {
		t.Errorf("served meta-tools %v, want toolcall's %v", served, want)
	}
}
