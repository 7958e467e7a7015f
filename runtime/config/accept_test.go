package config

import (
	"slices"
	"strings"
	"testing"
)

// TestAcceptFindings: the entries are read per backend, and one not shaped
// RULE@TOOL is refused naming the key and the fix.
func TestAcceptFindings(t *testing.T) {
	c := mustLoad(t, "version: 1\nbackends:\n  a:\n    command: x\n    accept_findings: [exfil-url@lookup, 'zero-width@prompts/p']\n  b:\n    command: x\n", nil)
	if got := c.AcceptedFindings(); !slices.Equal(got["a"], []string{"exfil-url@lookup", "zero-width@prompts/p"}) || len(got) != 1 {
		t.Errorf("AcceptedFindings() = %v", got)
	}
	_, err := loadYAML(t, "version: 1\nbackends:\n  a:\n    command: x\n    accept_findings: [lookup]\n", nil, "")
	if err == nil || !strings.Contains(err.Error(), "backends.a.accept_findings[0]") || !strings.Contains(err.Error(), "RULE@TOOL") {
		t.Errorf("err = %v, want the entry named with RULE@TOOL", err)
	}
}
