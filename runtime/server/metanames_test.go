package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMetaToolsFollowTheTable keeps the served meta-tools equal, in order,
// to toolcall's names, which the config reserves and the sandbox explains:
// a meta-tool added here and not there would be a backend name the config
// accepts.
func TestMetaToolsFollowTheTable(t *testing.T) {
	var served []string
	for _, mt := range metaTools {
		served = append(served, mt.name)
	}
	if want := toolcall.MetaToolNames(); !slices.Equal(served, want) {
		t.Errorf("served meta-tools %v, want toolcall's %v", served, want)
	}
}

// TestSchemasQuoteTheConfiguredLimits: call_tool_chain's schema states the
// limits this kiln applies, read from its config, not numbers typed again.
func TestSchemasQuoteTheConfiguredLimits(t *testing.T) {
	cfg := &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}
	cfg.Gateway.Sandbox.Timeout, cfg.Gateway.Sandbox.MaxTimeout = 45*time.Second, 10*time.Minute
	cfg.Gateway.MaxOutputSize, cfg.Gateway.Output.TruncateAt = 123456, 7890
	c, _ := newFleet(t, fleetOptions{config: cfg})
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		raw, _ := json.Marshal(tool)
		if strings.Contains(string(raw), "{") && strings.Contains(string(raw), "_ms}") {
			t.Errorf("%s: schema left a placeholder: %s", tool.Name, raw)
		}
		if tool.Name != toolcall.MetaChain {
			continue
		}
		for _, want := range []string{"default 45000", "above 600000", "default 123456", "over 7890 bytes"} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("call_tool_chain schema lacks %q: %s", want, raw)
			}
		}
	}
}
