//go:build e2e

package tests

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestChainLastExpression: a tier-3 program ending in a bare call returns
// that call's result, as the same call alone does in tier 2.
func TestChainLastExpression(t *testing.T) {
	s := newMCPGoHTTP(t, startHTTP(t, "--config", peerConfig(t, peerOptions{OnlyEverything: true})))
	tier2 := callReady(t, s, "call_tool_chain", chainTS("await everything.echo({message: `v1`})"))
	tier3 := callReady(t, s, "call_tool_chain", chainTS("const tag = `v1`;\nawait everything.echo({message: tag})"))
	for name, r := range map[string]result{"tier 2": tier2, "tier 3": tier3} {
		if r.IsError || !strings.Contains(r.Text(), "Echo: v1") {
			t.Errorf("%s: isError=%v %q, want the echo", name, r.IsError, r.Text())
		}
	}
	ts := callReady(t, s, "call_tool_chain", chainTS("const n: number = 20;\nawait everything.get_sum({a: n, b: 22} as {a: number, b: number})"))
	if ts.IsError || !strings.Contains(ts.Text(), "42") {
		t.Errorf("TypeScript program ending in a bare call: %s", ts.Text())
	}
}

// TestSandboxWorkerIsHidden: the worker subcommand is not in the help and,
// run by hand, says it is kiln serve's to start.
func TestSandboxWorkerIsHidden(t *testing.T) {
	help, _ := exec.Command(kilnBin(t), "help").CombinedOutput()
	if strings.Contains(string(help), "sandbox-worker") {
		t.Errorf("help lists the hidden sandbox-worker command:\n%s", help)
	}
	cmd := exec.Command(kilnBin(t), "sandbox-worker")
	cmd.Stdin = bytes.NewReader(nil)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "started by kiln serve") {
		t.Errorf("kiln sandbox-worker by hand: %v %s", err, out)
	}
}
