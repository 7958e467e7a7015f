//go:build e2e

package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspect runs the MCP Inspector CLI (the official client's command line,
// pinned in tests/package.json) against kiln serve over stdio and returns
// its JSON answer. It gets a private HOME: the CLI keeps a catalog there.
func inspect(t *testing.T, cfg string, args ...string) map[string]any {
	t.Helper()
	cli := filepath.Join(repoRoot(t), "tests/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("MCP Inspector missing (make peers installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	// The config goes by environment: the CLI takes a --config after the
	// server command as its own.
	argv := append([]string{cli, "--cli"}, args...)
	argv = append(argv, "-e", "KILN_CONFIG="+cfg, "--cwd", repoRoot(t), kilnBin(t), "serve")
	cmd := exec.CommandContext(ctx, "node", argv...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// The CLI exits non-zero on a tool error; its JSON answer says so.
	out, runErr := cmd.Output()
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %v: %v, no JSON answer (%v)\nstdout: %s\nstderr: %s", args, runErr, err, out, stderr.String())
	}
	return v
}

// TestInspectorThroughKiln: the MCP Inspector CLI lists and calls kiln's
// tools, and reads server-everything's resources and prompts through kiln
// as it would from the server itself.
func TestInspectorThroughKiln(t *testing.T) {
	cfg := peerConfig(t, peerOptions{})
	text := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	tools := inspect(t, cfg, "--method", "tools/list")
	if got := len(tools["tools"].([]any)); got != 7 {
		t.Errorf("tools/list: %d tools, want the 7 meta-tools: %s", got, text(tools))
	}
	call := inspect(t, cfg, "--method", "tools/call", "--tool-name", "call_tool_chain",
		"--tool-arg", `code=await everything.echo({message: "through the inspector"})`)
	if s := text(call); !strings.Contains(s, "through the inspector") || strings.Contains(s, `"isError":true`) {
		t.Errorf("tools/call echo: %s", s)
	}
	res := inspect(t, cfg, "--method", "resources/list")
	if s := text(res); !strings.Contains(s, "kiln://backends") || !strings.Contains(s, "demo://resource/static/document/architecture.md") {
		t.Errorf("resources/list lacks kiln's own or server-everything's resources: %.600s", s)
	}
	read := inspect(t, cfg, "--method", "resources/read", "--uri", "demo://resource/dynamic/text/7")
	if s := text(read); !strings.Contains(s, "demo://resource/dynamic/text/7") || !strings.Contains(s, `"text"`) {
		t.Errorf("resources/read of a templated resource: %.600s", s)
	}
	prompts := inspect(t, cfg, "--method", "prompts/list")
	if s := text(prompts); !strings.Contains(s, "everything__args-prompt") || !strings.Contains(s, `"discover"`) {
		t.Errorf("prompts/list lacks server-everything's or kiln's prompts: %.600s", s)
	}
	got := inspect(t, cfg, "--method", "prompts/get", "--prompt-name", "everything__args-prompt", "--prompt-args", "city=Lisbon", "state=Lisboa")
	if s := text(got); !strings.Contains(s, "Lisbon") {
		t.Errorf("prompts/get through kiln: %.600s", s)
	}
}
