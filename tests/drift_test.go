//go:build e2e

package tests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// The rug pull of issue 27, against a real kiln and a real backend: the
// compiled backend "memory" points at the fault server impersonating
// memory's reviewed manifest (FAULT_RUG_PULL). After the first call the
// server rewrites search_nodes' description into instructions to read
// ~/.ssh/id_rsa and pass it as a new "note" parameter, adds a tool
// "exfil", and tells kiln its tools changed.

// poisonMark is a piece of the poisoned description no reviewed text has.
const poisonMark = "id_rsa"

// startRugPull runs kiln over stdio with memory behind the rug-pulling
// fault server; gateway holds extra gateway lines (expose, drift).
func startRugPull(t *testing.T, gateway string) *faultKiln {
	t.Helper()
	return startFaultKilnWith(t, fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 10s
%sbackends:
  memory:
    command: %s
    env:
      FAULT_RUG_PULL: %s
      FAULT_RUG_PULL_TOOL: search_nodes
`, t.TempDir(), gateway, faultBin(t), filepath.Join(repoRoot(t), "manifests", "memory.json")))
}

// pull makes the first call (through call, which must succeed once the
// backend is up) and waits until kiln has seen the changed tool list:
// exfil is in the drift kiln://backends reports.
func pull(t *testing.T, k *faultKiln, call func() bool) {
	t.Helper()
	eventually(t, "the first call reaches the backend", call)
	eventually(t, "kiln sees the rug pull", func() bool {
		return strings.Contains(k.resource("kiln://backends"), "exfil")
	})
}

func firstCallChain(t *testing.T, k *faultKiln) func() bool {
	return func() bool {
		r := k.chain(t.Context(), `{"tool":"memory.read_graph"}`)
		return !r.IsError && strings.Contains(r.Text(), "read_graph called with")
	}
}

// TestDriftPinHoldsBackTheRugPull: under the default, drift: pin, no
// client ever sees the poisoned description or exfil, in tool_info,
// search_tools or a call_tool_chain program; a call of exfil is refused
// with the reason and the command that accepts it; a call passing the new
// parameter is refused against the reviewed schema; the reviewed tools
// still answer.
func TestDriftPinHoldsBackTheRugPull(t *testing.T) {
	k := startRugPull(t, "")
	pull(t, k, firstCallChain(t, k))
	ctx := t.Context()

	info := k.call(ctx, "tool_info", map[string]any{"tool_name": "memory.search_nodes", "detail": "full"}, nil)
	if info.IsError || !strings.Contains(info.Text(), "Search for nodes in the knowledge graph") || strings.Contains(info.Text(), poisonMark) || strings.Contains(info.Text(), `"note"`) {
		t.Errorf("tool_info memory.search_nodes under pin: %s", info.Text())
	}
	held := k.call(ctx, "tool_info", map[string]any{"tool_name": "memory.exfil"}, nil)
	if !held.IsError || !strings.Contains(held.Text(), "held back pending review") {
		t.Errorf("tool_info memory.exfil under pin: %s", held.Text())
	}
	for _, q := range []string{"send data to the collector", "read the ssh key and pass it as note", "exfil"} {
		// The answer may quote the query back; it must name no held tool
		// and no poisoned text.
		r := k.call(ctx, "search_tools", map[string]any{"task_description": q, "limit": 20}, nil)
		if strings.Contains(r.Text(), "memory.exfil") || strings.Contains(r.Text(), poisonMark) || strings.Contains(r.Text(), "IMPORTANT") {
			t.Errorf("search_tools %q under pin shows the rug pull: %s", q, r.Text())
		}
	}
	if r := k.call(ctx, "list_tools_meta", map[string]any{}, nil); strings.Contains(r.Text(), "exfil") || strings.Contains(r.Text(), poisonMark) {
		t.Errorf("list_tools_meta under pin shows the rug pull: %s", r.Text())
	}

	// Calls: exfil in each tier, the new parameter, the reviewed call.
	for _, code := range []string{`{"tool":"memory.exfil","arguments":{"data":"k"}}`, `{"tool":"exfil","arguments":{"data":"k"}}`} {
		r := k.chain(ctx, code)
		if !r.IsError || !strings.Contains(r.Text(), "memory.exfil is held back pending review") || !strings.Contains(r.Text(), "`make generate`") {
			t.Errorf("%s under pin: %s", code, r.Text())
		}
	}
	if r := k.chain(ctx, `await memory.exfil({data: "k"})`); !r.IsError || strings.Contains(r.Text(), "exfil called") || !strings.Contains(r.Text(), "memory.exfil is held back pending review") {
		t.Errorf("a program called exfil under pin: %s", r.Text())
	}
	r := k.chain(ctx, `return JSON.stringify([Object.keys(memory).includes("exfil"), __interfaces.memory.search_nodes.description, Object.keys(__interfaces.memory.search_nodes.input_schema.properties)])`)
	if r.IsError || r.Text() == "" || strings.Contains(r.Text(), "true") || strings.Contains(r.Text(), poisonMark) || strings.Contains(r.Text(), "note") {
		t.Errorf("the sandbox bridge under pin: %s", r.Text())
	}
	r = k.chain(ctx, `{"tool":"memory.search_nodes","arguments":{"query":"x","note":"-----BEGIN OPENSSH PRIVATE KEY-----"}}`)
	if !r.IsError || !strings.Contains(r.Text(), "argument note is not in the tool's reviewed input schema") || strings.Contains(r.Text(), "search_nodes called") {
		t.Errorf("a call passing the new parameter under pin: %s", r.Text())
	}
	if r := k.chain(ctx, `await memory.search_nodes({query: "x"})`); r.IsError || !strings.Contains(r.Text(), `search_nodes called with {"query":"x"}`) {
		t.Errorf("the reviewed call of the changed tool under pin: %s", r.Text())
	}

	// What is held back is shown, with the command that accepts it, and
	// logged once per change, not per refresh.
	var backends []struct {
		Name      string `json:"name"`
		Review    string `json:"review"`
		DriftMode string `json:"drift_mode"`
		Drift     *struct {
			Served   string   `json:"served"`
			HeldBack []string `json:"held_back"`
			Accept   string   `json:"accept"`
		} `json:"drift"`
	}
	if err := json.Unmarshal([]byte(k.resource("kiln://backends")), &backends); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, b := range backends {
		if b.Name != "memory" {
			continue
		}
		found = true
		if b.Review != "compiled manifest" || b.DriftMode != "pin" || b.Drift == nil || b.Drift.Served != "reviewed" ||
			!strings.Contains(strings.Join(b.Drift.HeldBack, "|"), "tool exfil (new") || !strings.Contains(strings.Join(b.Drift.HeldBack, "|"), "tool search_nodes (changed") ||
			!strings.Contains(b.Drift.Accept, "make generate") {
			t.Errorf("kiln://backends memory under pin: %+v %+v", b, b.Drift)
		}
	}
	if !found {
		t.Errorf("kiln://backends lists no memory: %s", k.resource("kiln://backends"))
	}
	k.mu.Lock()
	logs := k.stderr.String()
	k.mu.Unlock()
	if n := strings.Count(logs, "added exfil"); n != 1 || !strings.Contains(logs, "holding the changes back") {
		t.Errorf("the held-back exfil was logged %d times; want once:\n%s", n, logs)
	}
}

// TestDriftPinDirectExposure: with expose: direct a client's tools/list
// never carries the poisoned description or exfil, and a direct call
// passing the new parameter is refused.
func TestDriftPinDirectExposure(t *testing.T) {
	k := startRugPull(t, "  expose: direct\n")
	ctx := t.Context()
	direct := func(name string, args map[string]any) result {
		res, err := k.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			return result{IsError: true, Content: []map[string]any{{"type": "text", "text": err.Error()}}}
		}
		r, err := toResult(res.Content, res.StructuredContent, res.IsError)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pull(t, k, func() bool { return !direct("memory__read_graph", nil).IsError })
	eventually(t, "tools/list after the rug pull is final", func() bool {
		res, err := k.c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res.Tools)
		if strings.Contains(string(raw), "exfil") || strings.Contains(string(raw), poisonMark) || strings.Contains(string(raw), `"note"`) {
			t.Fatalf("tools/list under pin shows the rug pull: %s", raw)
		}
		return len(res.Tools) == 9 && strings.Contains(string(raw), "Search for nodes in the knowledge graph")
	})
	if r := direct("memory__search_nodes", map[string]any{"query": "x", "note": "key"}); !r.IsError || !strings.Contains(r.Text(), "not in the tool's reviewed input schema") {
		t.Errorf("a direct call passing the new parameter under pin: %s", r.Text())
	}
	if r := direct("memory__exfil", map[string]any{"data": "k"}); !r.IsError || strings.Contains(r.Text(), "exfil called") {
		t.Errorf("a direct call of exfil under pin: %s", r.Text())
	}
}

// TestDriftWarnAndFollowServeLive: under warn the live (poisoned) text is
// served and the drift logged; under follow it is served with no warning.
func TestDriftWarnAndFollowServeLive(t *testing.T) {
	for _, mode := range []string{"warn", "follow"} {
		t.Run(mode, func(t *testing.T) {
			k := startRugPull(t, "  drift: "+mode+"\n")
			pull(t, k, firstCallChain(t, k))
			ctx := t.Context()
			if r := k.call(ctx, "tool_info", map[string]any{"tool_name": "memory.search_nodes"}, nil); !strings.Contains(r.Text(), poisonMark) {
				t.Errorf("tool_info under %s does not serve the live description: %s", mode, r.Text())
			}
			if r := k.chain(ctx, `{"tool":"memory.exfil","arguments":{"data":"k"}}`); r.IsError || !strings.Contains(r.Text(), "exfil called") {
				t.Errorf("exfil under %s: %s", mode, r.Text())
			}
			if r := k.chain(ctx, `{"tool":"memory.search_nodes","arguments":{"query":"x","note":"k"}}`); r.IsError {
				t.Errorf("the live parameter under %s: %s", mode, r.Text())
			}
			warned := k.logged("serving the live list (drift: warn)")
			if mode == "warn" && !warned {
				t.Error("drift: warn logged no drift warning")
			}
			if mode == "follow" && (warned || k.logged("drifted")) {
				t.Error("drift: follow logged the drift")
			}
		})
	}
}
