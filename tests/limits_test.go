//go:build e2e

package tests

import (
	"strings"
	"testing"
)

// TestConfiguredLimitsApply shows gateway.sandbox and gateway.output keys
// change what a client sees.
func TestConfiguredLimitsApply(t *testing.T) {
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: `  sandbox:
    max_calls: 2
  output:
    size_footer: false
    truncate_at: 2000`})
	s := newMCPGoStdio(t, "--config", cfg)
	r := callReady(t, s, "call_tool_chain", chainTS(`
		for (let i = 0; i < 3; i++) { await everything.echo({message: "n" + i}); }
		return "all three";`))
	if !r.IsError || strings.Contains(r.Text(), "all three") || !strings.Contains(r.Text(), "2") {
		t.Errorf("third call under max_calls 2: isError=%v %s", r.IsError, r.Text())
	}
	// A long output is truncated at 2000 bytes, without the size footer.
	r = callReady(t, s, "call_tool_chain", chainTS(`return "line of output\n".repeat(1000)`))
	if r.IsError || len(r.Text()) > 2100 || !strings.Contains(r.Text(), "truncated") || strings.Contains(r.Text(), "[Output:") {
		t.Errorf("truncate_at 2000 without footer: %d bytes, %q…", len(r.Text()), r.Text()[:min(200, len(r.Text()))])
	}
}
