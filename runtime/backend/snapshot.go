package backend

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Snapshot lists everything the backend offers (every page of tools,
// resources, resource templates and prompts) as a manifest.
func (c *Conn) Snapshot(ctx context.Context) (*manifest.Manifest, error) {
	m := &manifest.Manifest{
		Version:         manifest.Version,
		Backend:         c.name,
		Transport:       c.transport,
		Server:          manifest.ServerInfo{Name: c.server.Name, Version: c.server.Version, Title: c.server.Title},
		ProtocolVersion: c.protocol,
		Instructions:    c.instr,
	}
	tools, err := c.listTools(ctx)
	if err != nil {
		return nil, err
	}
	m.Tools = tools
	if m.Resources, err = c.ListResources(ctx); err != nil {
		return nil, err
	}
	if m.ResourceTemplates, err = c.ListResourceTemplates(ctx); err != nil {
		return nil, err
	}
	if m.Prompts, err = c.ListPrompts(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// listTools follows every cursor and returns the tools as the backend
// published them, from the captured raw pages rather than the SDK's
// decoded structs.
func (c *Conn) listTools(ctx context.Context) ([]manifest.Tool, error) {
	if c.caps.Tools == nil {
		return nil, nil
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodToolsList))
	res, err := c.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, c.wrap("list tools", err)
	}
	// The SDK leaves out tools a client must not call, such as those with
	// invalid x-mcp-header annotations (SEP-2243); kiln keeps the raw bytes
	// of the others only. An SDK that kept none is not trusted to filter.
	accepted := map[string]bool{}
	for _, t := range res.Tools {
		accepted[t.Name] = true
	}
	var tools []manifest.Tool
	seen := map[string]bool{}
	for _, page := range capture.pages {
		var p struct {
			Tools []manifest.Tool `json:"tools"`
		}
		if err := json.Unmarshal(page, &p); err != nil {
			return nil, fmt.Errorf("backend %q: malformed tools/list page: %w", c.name, err)
		}
		for _, t := range p.Tools {
			if seen[t.Name] || (len(accepted) > 0 && !accepted[t.Name]) {
				continue
			}
			seen[t.Name] = true
			if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
				t.InputSchema = json.RawMessage(`{"type":"object"}`)
			}
			if err := manifest.CheckInputSchema(t); err != nil {
				// The whole list is refused: serving the tool would validate
				// every call against a shape that cannot hold arguments.
				return nil, fmt.Errorf("backend %q: tools/list: %w; the backend must publish an object schema for every tool", c.name, err)
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}
