package chain

import (
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// TestHeldBackHint: a program's call of a tool held back under drift: pin
// (the bridge does not bind it) is told why, not only that it is missing.
func TestHeldBackHint(t *testing.T) {
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "memory"}, true); err != nil {
		t.Fatal(err)
	}
	reg.Hold("memory", map[string]string{"exfil": "memory.exfil is held back pending review; `make generate` accepts it"})
	e := &Engine{opts: Options{Registry: reg}}
	msg := "Uncaught TypeError: Object has no member 'exfil'\n    at input.ts:1:19\nhint: backend memory has no tool exfil; list its tools with Object.keys(__interfaces[\"memory\"]) or search_tools"
	if got := e.heldBack(msg); !strings.Contains(got, "memory.exfil is held back pending review") {
		t.Errorf("heldBack = %q; want the registry's reason", got)
	}
	if got := e.heldBack(strings.ReplaceAll(msg, "exfil", "nope")); got != "" {
		t.Errorf("heldBack of a tool that is only missing = %q; want nothing added", got)
	}
}
