//go:build e2e

package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/registry"
)

// exposeClients are the real clients the exposure modes are checked with:
// mcp-go over stdio and the go-sdk over streamable HTTP.
func exposeClients(cfg string) map[string]func(t *testing.T) session {
	return map[string]func(t *testing.T) session{
		"mcp-go/stdio": func(t *testing.T) session { return newMCPGoStdio(t, "--config", cfg) },
		"go-sdk/http":  func(t *testing.T) session { return newSDKHTTP(t, startHTTP(t, "--config", cfg)) },
	}
}

func listNames(t *testing.T, s session) []string {
	t.Helper()
	names, err := s.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func TestExposeDirect(t *testing.T) {
	cfg := peerConfig(t, peerOptions{Gateway: "  expose: direct"})
	for name, open := range exposeClients(cfg) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			names := listNames(t, s)
			for _, want := range []string{"everything__echo", "everything__get-sum", "filesystem__read_text_file", "memory__read_graph"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list lacks %s: %v", want, names)
				}
			}
			for _, n := range names {
				if n == "search_tools" || n == "call_tool_chain" || strings.Contains(n, ".") || len(n) > 64 {
					t.Errorf("direct mode lists %q", n)
				}
			}
			if r := callReady(t, s, "everything__echo", map[string]any{"message": "hello direct"}); r.IsError || !strings.Contains(r.Text(), "hello direct") {
				t.Errorf("everything__echo: isError=%v %q", r.IsError, r.Text())
			}
			if r := callReady(t, s, "everything__get-sum", map[string]any{"a": 2, "b": 40}); r.IsError || !strings.Contains(r.Text(), "42") {
				t.Errorf("everything__get-sum: isError=%v %q", r.IsError, r.Text())
			}
			if r := callReady(t, s, "everything__get-tiny-image", map[string]any{}); !slices.ContainsFunc(r.Content, func(c map[string]any) bool {
				return c["type"] == "image" && c["mimeType"] == "image/png" && c["data"] != ""
			}) {
				t.Errorf("everything__get-tiny-image: no image block in %v", r.Content)
			}
			r := callReady(t, s, "everything__get-structured-content", map[string]any{"location": "New York"})
			var v map[string]any
			if r.IsError || json.Unmarshal(r.Structured, &v) != nil || len(v) == 0 {
				t.Errorf("everything__get-structured-content: isError=%v structuredContent=%s", r.IsError, r.Structured)
			}
			if r := callReady(t, s, "filesystem__read_text_file", map[string]any{"path": "/etc/hostname"}); !r.IsError {
				t.Errorf("read outside the root: isError=false, want true; %q", r.Text())
			}
			if r := callReady(t, s, "everything__get-sum", map[string]any{"a": "two"}); !r.IsError || !strings.Contains(r.Text(), "/a") {
				t.Errorf("invalid arguments: isError=%v %q", r.IsError, r.Text())
			}
		})
	}
}

func TestExposeHybrid(t *testing.T) {
	cfg := peerConfig(t, peerOptions{Gateway: "  expose: hybrid\n  pin: [everything.echo, \"memory.*\"]"})
	for name, open := range exposeClients(cfg) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			names := listNames(t, s)
			for _, want := range []string{"search_tools", "call_tool_chain", "tool_info", "everything__echo", "memory__read_graph", "memory__create_entities"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list lacks %s: %v", want, names)
				}
			}
			for _, n := range names {
				if strings.HasPrefix(n, "filesystem__") || n == "everything__get-sum" {
					t.Errorf("hybrid mode lists unpinned %q", n)
				}
			}
			if r := callReady(t, s, "everything__echo", map[string]any{"message": "pinned"}); r.IsError || !strings.Contains(r.Text(), "pinned") {
				t.Errorf("everything__echo: isError=%v %q", r.IsError, r.Text())
			}
			// The rest stays reachable through the meta-tools.
			if r := callReady(t, s, "call_tool_chain", chainJSON("everything.get-sum", map[string]any{"a": 1, "b": 2})); r.IsError || !strings.Contains(r.Text(), "3") {
				t.Errorf("get-sum through call_tool_chain: isError=%v %q", r.IsError, r.Text())
			}
		})
	}
}

// TestExposeBare checks bare names, and a bare backend that is not
// compiled in claiming a name a compiled bare backend already has: it
// cannot fail the config at start (its tools are unknown until it
// connects), so its tool gets the hash suffix.
func TestExposeBare(t *testing.T) {
	mods := repoRoot(t) + "/tests/node_modules/@modelcontextprotocol"
	k := startFaultKilnWith(t, fmt.Sprintf(`version: 1
gateway:
  state_dir: %[1]s
  expose: direct
backends:
  everything:
    command: node
    args: [%[2]s/server-everything/dist/index.js, stdio]
    bare: true
  again:
    command: node
    args: [%[2]s/server-everything/dist/index.js, stdio]
    bare: true
`, t.TempDir(), mods))
	named, _ := registry.ExposeNames([]registry.ExposeTool{{Backend: "again", Tool: "echo", Bare: true}}, func(n string) bool { return n == "echo" })
	suffixed := named["again.echo"]
	var names []string
	eventually(t, "the uncompiled bare backend's echo is listed as "+suffixed, func() bool {
		res, err := k.c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return slices.Contains(names, suffixed)
	})
	for _, want := range []string{"echo", "get-sum"} {
		if !slices.Contains(names, want) {
			t.Errorf("bare name %s missing: %v", want, names)
		}
	}
	for _, tool := range []string{"echo", suffixed} {
		r := k.call(t.Context(), tool, map[string]any{"message": "bare " + tool}, nil)
		for r.IsError && strings.Contains(r.Text(), "still starting") {
			r = k.call(t.Context(), tool, map[string]any{"message": "bare " + tool}, nil)
		}
		if r.IsError || !strings.Contains(r.Text(), "bare "+tool) {
			t.Errorf("%s: isError=%v %q", tool, r.IsError, r.Text())
		}
	}
}

// TestExposeListChanged registers a backend at run time in hybrid mode
// with a pin naming it, and waits for tools/list_changed both ways.
func TestExposeListChanged(t *testing.T) {
	k := startFaultKilnWith(t, fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  expose: hybrid
  pin: ["weather.*"]
  registration:
    allow_commands: [%s]
backends: {}
`, t.TempDir(), faultBin(t)))
	listChanged := func() int {
		k.mu.Lock()
		defer k.mu.Unlock()
		n := 0
		for _, note := range k.notes {
			if note.Method == mcpgo.MethodNotificationToolsListChanged {
				n++
			}
		}
		return n
	}
	listed := func(name string) bool {
		res, err := k.c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Tools, func(tl mcpgo.Tool) bool { return tl.Name == name })
	}
	before := listChanged()
	if _, r := k.register("weather", nil, nil); r.IsError {
		t.Fatal(r.Text())
	}
	eventually(t, "tools/list_changed after register_manual", func() bool { return listChanged() > before })
	if !listed("weather__echo") {
		t.Fatal("registered tool weather__echo not listed")
	}
	if r := k.call(t.Context(), "weather__echo", map[string]any{"text": "sunny"}, nil); r.IsError || !strings.Contains(r.Text(), "sunny") {
		t.Errorf("weather__echo: isError=%v %q", r.IsError, r.Text())
	}
	before = listChanged()
	if r := k.call(t.Context(), "deregister_manual", map[string]any{"manual_name": "weather"}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	eventually(t, "tools/list_changed after deregister_manual", func() bool { return listChanged() > before })
	if listed("weather__echo") {
		t.Error("deregistered tool still listed")
	}
}
