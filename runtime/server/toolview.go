package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilnmcp/kiln/runtime/registry"
)

// toolLine is how long a description may be where hundreds of tools are
// listed at once.
const toolLine = 100

type toolsIndex struct {
	Total int `json:"total"`
	// Backends maps each backend to its tool IDs and one-line
	// descriptions; JSON objects keep the listing compact.
	Backends map[string]map[string]string `json:"backends"`
	Next     string                       `json:"next"`
}

func (s *Server) toolsIndex(ctx context.Context) toolsIndex {
	tools := s.visibleTools(ctx)
	out := toolsIndex{Total: len(tools), Backends: map[string]map[string]string{},
		Next: "kiln://tool/{tool_name} or tool_info for one tool's parameters; call_tool_chain runs it"}
	for _, t := range tools {
		m := out.Backends[t.Backend]
		if m == nil {
			m = map[string]string{}
			out.Backends[t.Backend] = m
		}
		m[t.ID()] = FirstSentence(t.Description, toolLine)
	}
	return out
}

func (s *Server) toolResource(ctx context.Context, uri string) (any, error) {
	name := templateArg(uri, "kiln://tool/", "")
	t, err := s.resolveVisible(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("kiln://tool/%s: %w", name, err)
	}
	out := s.fullTool(t)
	out["signature"] = t.Signature()
	out["parameters"] = params(t)
	if v, err := s.findBackend(t.Backend); err == nil {
		out["backend_state"] = v.State
	}
	return out, nil
}

// byBackend groups the registry's tools under every known backend, in the
// order of kiln://backends.
func (s *Server) byBackend(ctx context.Context) ([]backendView, map[string][]*registry.Tool) {
	tools := map[string][]*registry.Tool{}
	for _, t := range s.visibleTools(ctx) {
		tools[t.Backend] = append(tools[t.Backend], t)
	}
	return s.backends(), tools
}

func (s *Server) llms(ctx context.Context) string {
	views, tools := s.byBackend(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "# kiln\n\n> MCP gateway serving %d tools from %d backends through %d meta-tools. "+
		"Find a tool with search_tools, read it with tool_info or %s, run it with call_tool_chain. "+
		"Descriptions and signatures: %s. Sandbox guide: %s.\n", len(s.visibleTools(ctx)), len(views), len(metaTools), uriTool, uriLLMsFull, uriChainGuide)
	for _, v := range views {
		ts := tools[v.Name]
		fmt.Fprintf(&b, "\n## %s (%s, %s; call as %s.<tool>)\n", v.Name, v.State, plural(len(ts), "tool"), v.Name)
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		if len(names) > 0 {
			b.WriteString(strings.Join(names, ", ") + "\n")
		}
	}
	return b.String()
}

func (s *Server) llmsFull(ctx context.Context) string {
	views, tools := s.byBackend(ctx)
	ref := refIn(s.view())
	var b strings.Builder
	fmt.Fprintf(&b, "# kiln: every tool\n\n%d tools from %d backends. Run one with call_tool_chain, as TypeScript "+
		"`const r = await backend.tool({...}); return r;` or as JSON `{\"tool\": \"backend.tool\", \"arguments\": {...}}`. "+
		"In signatures, `?` marks an optional parameter.\n", len(s.visibleTools(ctx)), len(views))
	for _, v := range views {
		fmt.Fprintf(&b, "\n## %s (%s)\n", v.Name, v.State)
		if len(tools[v.Name]) == 0 {
			b.WriteString("\nNo tools.\n")
		}
		for _, t := range tools[v.Name] {
			fmt.Fprintf(&b, "\n### %s\n\n`%s(%s)`\n", t.ID(), ref(t.Backend, t.Name), t.Signature())
			if d := strings.TrimSpace(t.Description); d != "" {
				b.WriteString("\n" + d + "\n")
			}
		}
	}
	return b.String()
}
