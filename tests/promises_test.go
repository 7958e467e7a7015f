//go:build e2e

package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestCompiledBackendLeftOutOfTheConfigIsInvisible runs the default
// binary (everything, filesystem and memory compiled in) on a config that
// names only a fault backend: the compiled backends appear nowhere.
func TestCompiledBackendLeftOutOfTheConfigIsInvisible(t *testing.T) {
	k := startFaultKiln(t, fmt.Sprintf("  f1:\n    transport: stdio\n    command: %s\n    env: {FAULT_STATE_DIR: %s}\n", faultBin(t), t.TempDir()))
	ctx := t.Context()

	r := k.call(ctx, "search_tools", map[string]any{"task_description": "create entities in the knowledge graph memory", "limit": 20}, nil)
	for _, b := range []string{"memory.", "everything.", "filesystem."} {
		if strings.Contains(r.Text(), b) {
			t.Errorf("search_tools shows a compiled backend the config leaves out (%s):\n%s", b, r.Text())
		}
	}
	r = k.call(ctx, "list_tools_meta", map[string]any{"page_size": 200}, nil)
	if strings.Contains(r.Text(), "memory.") || strings.Contains(r.Text(), "everything.") {
		t.Errorf("list_tools_meta shows compiled backends the config leaves out:\n%.600s", r.Text())
	}
	if r := k.call(ctx, "tool_info", map[string]any{"tool_name": "memory.read_graph"}, nil); !r.IsError {
		t.Errorf("tool_info answers for a hidden backend: %s", r.Text())
	}
	if r := k.chain(ctx, `const kinds = [typeof memory, typeof globalThis["everything"], typeof filesystem]; return kinds.join(",");`); r.IsError || !strings.Contains(r.Text(), "undefined,undefined,undefined") {
		t.Errorf("compiled backends are still bound in the sandbox: %s", r.Text())
	}
	if r := k.chain(ctx, `{"tool":"memory.read_graph","arguments":{}}`); !r.IsError {
		t.Errorf("a JSON call reached a hidden backend: %s", r.Text())
	}
	// The fault backend the config names is served.
	if r := k.chain(ctx, `{"tool":"f1.echo","arguments":{"text":"here"}}`); r.IsError || !strings.Contains(r.Text(), "here") {
		t.Errorf("configured backend: %s", r.Text())
	}
	k.mu.Lock()
	logged := k.stderr.String()
	k.mu.Unlock()
	if n := strings.Count(logged, "compiled backends not named in the config are not served"); n != 1 || !strings.Contains(logged, "everything,filesystem,memory") {
		t.Errorf("want one log line naming everything,filesystem,memory; got %d in:\n%s", n, logged)
	}
}

// TestMaxOutputSizeRaisesTheCap asks for a 500 KB output with
// max_output_size 1,000,000 and gets it whole. The first call is made
// right after start to a backend not compiled in: it waits for the
// backend to connect and its tools to be listed instead of failing.
func TestMaxOutputSizeRaisesTheCap(t *testing.T) {
	k := startFaultKiln(t, fmt.Sprintf("  f1:\n    transport: stdio\n    command: %s\n    env: {FAULT_STATE_DIR: %s}\n", faultBin(t), t.TempDir()))
	call := `{"tool":"f1.huge","arguments":{"bytes":500000}}`
	r := k.call(t.Context(), "call_tool_chain", map[string]any{"code": call, "max_output_size": 1000000}, nil)
	if r.IsError || len(r.Text()) != 500000 {
		t.Fatalf("max_output_size 1,000,000: isError=%v, %d bytes, want the whole 500,000: %.300s", r.IsError, len(r.Text()), r.Text())
	}
	r = k.call(t.Context(), "call_tool_chain", map[string]any{"code": call}, nil)
	if len(r.Text()) >= 500000 {
		t.Fatalf("without max_output_size the output should be shortened; got %d bytes", len(r.Text()))
	}
}
