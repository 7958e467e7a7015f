package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// With KILN_TEST_FLAKY_MARKER set, the test binary is a real MCP stdio
// server (mcp-go) that fails its first start and serves from the second.
func init() {
	marker := os.Getenv("KILN_TEST_FLAKY_MARKER")
	if marker == "" {
		return
	}
	if _, err := os.Stat(marker); err != nil {
		os.WriteFile(marker, nil, 0o644)
		fmt.Fprintln(os.Stderr, "first start: dependency not ready")
		os.Exit(1)
	}
	s := server.NewMCPServer("flaky", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("ping", mcp.WithDescription("Answers pong.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("pong"), nil
		})
	if err := server.ServeStdio(s); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func TestFailedStartIsRetried(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "flaky", Tools: []manifest.Tool{{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, true); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{
		Name: "flaky", Transport: config.TransportStdio, Command: exe, Enabled: true, Timeout: 30 * time.Second,
		Env: map[string]string{"KILN_TEST_FLAKY_MARKER": filepath.Join(t.TempDir(), "started")},
	}}}
	cfg.Gateway.ConnectTimeout = 20 * time.Second
	d := New(reg, cfg, Options{})
	d.Start(t.Context())
	defer d.Close()
	if err := d.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = d.CallTool(t.Context(), "flaky", "ping", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "kiln retries at") || !strings.Contains(err.Error(), "dependency not ready") {
		t.Fatalf("call after the failed first start: %v", err)
	}
	// The retry comes about a second later; poll the state, not a clock.
	for ctx := t.Context(); ; {
		if d.Status()[0].State == StateHealthy {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("backend never recovered")
		case <-time.After(50 * time.Millisecond):
		}
	}
	res, err := d.CallTool(t.Context(), "flaky", "ping", nil)
	if err != nil || res.TextContent() != "pong" {
		t.Fatalf("call after recovery: %v %+v", err, res)
	}
}
