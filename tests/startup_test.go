//go:build e2e

package tests

import (
	"strings"
	"sync"
	"testing"
)

func TestDiscoveryBeforeBackendsConnect(t *testing.T) {
	s := newMCPGoStdio(t, "--config", peerConfig(t, peerOptions{EverythingDelay: "4", OnlyEverything: true}))

	// Discovery answers from the compiled registry at once.
	r, err := s.Call(t.Context(), "search_tools", map[string]any{"task_description": "echo a message"})
	if err != nil || r.IsError || !strings.Contains(r.Text(), "everything.echo") {
		t.Fatalf("search_tools while backends start: err=%v %q", err, r.Text())
	}
	// The first call of each tier to the starting backend waits for it to
	// connect (the backend sleeps 4 s before it speaks) instead of failing.
	first := map[string]string{
		"tier 1": `{"tool": "everything.echo", "arguments": {"message": "one"}}`,
		"tier 2": `await everything.echo({message: "two"})`,
		"tier 3": `const a = await everything.echo({message: "three"}); return a;`,
	}
	var wg sync.WaitGroup
	for tier, code := range first {
		wg.Go(func() {
			r, err := s.Call(t.Context(), "call_tool_chain", map[string]any{"code": code})
			want := strings.TrimPrefix(tier, "tier ")
			want = map[string]string{"1": "one", "2": "two", "3": "three"}[want]
			switch {
			case err != nil:
				t.Errorf("%s first call: %v", tier, err)
			case r.IsError || !strings.Contains(r.Text(), want):
				t.Errorf("%s first call to a starting backend: isError=%v %q", tier, r.IsError, r.Text())
			}
		})
	}
	wg.Wait()
	// A disabled backend is explained, not hidden.
	r, _ = s.Call(t.Context(), "call_tool_chain", chainJSON("filesystem.list_allowed_directories", map[string]any{}))
	if !r.IsError || !strings.Contains(r.Text(), "disabled") {
		t.Errorf("call to a disabled backend: %q", r.Text())
	}
}
