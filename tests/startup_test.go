//go:build e2e

package tests

import (
	"strings"
	"testing"
)

func TestDiscoveryBeforeBackendsConnect(t *testing.T) {
	s := newMCPGoStdio(t, "--config", peerConfig(t, peerOptions{EverythingDelay: "4", OnlyEverything: true}))

	// Discovery answers from the compiled registry at once.
	r, err := s.Call(t.Context(), "search_tools", map[string]any{"task_description": "echo a message"})
	if err != nil || r.IsError || !strings.Contains(r.Text(), "everything.echo") {
		t.Fatalf("search_tools while backends start: err=%v %q", err, r.Text())
	}
	// A call to the starting backend says so plainly instead of waiting
	// for it: were it waiting, the 4 s backend would have answered "hi".
	r, err = s.Call(t.Context(), "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "hi"}))
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text(), `backend "everything" is still starting, retry in a moment`) {
		t.Fatalf("call to a starting backend: isError=%v %q", r.IsError, r.Text())
	}
	// A disabled backend is explained, not hidden.
	r, _ = s.Call(t.Context(), "call_tool_chain", chainJSON("filesystem.list_allowed_directories", map[string]any{}))
	if !r.IsError || !strings.Contains(r.Text(), "disabled") {
		t.Errorf("call to a disabled backend: %q", r.Text())
	}
	// And once it has connected, the same call succeeds.
	r = callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "hi"}))
	if r.IsError || !strings.Contains(r.Text(), "hi") {
		t.Errorf("call after start: %q", r.Text())
	}
}
