package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The kiln:// resources the gateway's own error messages point models at.
const (
	uriBackends = "kiln://backends"
	uriBackend  = "kiln://backend/{backend_name}"
	uriStats    = "kiln://stats"
)

func (s *Server) addResources() {
	s.mcp.AddResource(mcp.NewResource(uriBackends, "backends",
		mcp.WithResourceDescription("Every backend: transport, connection state and since when, tool count, last error."),
		mcp.WithMIMEType("application/json")),
		s.jsonResource(uriBackends, func(context.Context, string) (any, error) { return s.backends(), nil }))
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(uriBackend, "backend",
		mcp.WithTemplateDescription("One backend in detail: state, last error, the tail of its stderr, its tools."),
		mcp.WithTemplateMIMEType("application/json")),
		s.jsonResource(uriBackend, s.backend))
	s.mcp.AddResource(mcp.NewResource(uriStats, "stats",
		mcp.WithResourceDescription("call_tool_chain output statistics: bytes returned, processed and saved, and how often each pipeline stage fired."),
		mcp.WithMIMEType("application/json")),
		s.jsonResource(uriStats, func(context.Context, string) (any, error) { return s.stats(), nil }))
}

func (s *Server) jsonResource(name string, get func(ctx context.Context, uri string) (any, error)) func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		v, err := get(ctx, req.Params.URI)
		if err != nil {
			return nil, err
		}
		raw, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(raw)}}, nil
	}
}

type backendView struct {
	Name            string    `json:"name"`
	Transport       string    `json:"transport,omitempty"`
	State           string    `json:"state"`
	Since           time.Time `json:"since,omitzero"`
	Compiled        bool      `json:"compiled"`
	Tools           int       `json:"tools"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	Error           string    `json:"error,omitempty"`
}

// backends merges the registry (what is compiled) with the dispatcher (what
// is configured and connected), so a backend missing from either side still
// shows, with a state that says why.
func (s *Server) backends() []backendView {
	byName := map[string]*backendView{}
	var order []string
	for _, b := range s.opts.Registry.Backends() {
		byName[b.Name()] = &backendView{Name: b.Name(), State: "not configured", Compiled: b.Compiled, Tools: len(b.Manifest.Tools)}
		order = append(order, b.Name())
	}
	if s.opts.Status != nil {
		for _, st := range s.opts.Status.Status() {
			v, ok := byName[st.Name]
			if !ok {
				v = &backendView{Name: st.Name}
				byName[st.Name] = v
				order = append(order, st.Name)
			}
			v.Transport, v.State, v.Since, v.ProtocolVersion, v.Error = st.Transport, string(st.State), st.Since, st.ProtocolVersion, st.Error
			if !ok {
				v.State += " (not compiled in: run make generate && make build)"
			}
		}
	}
	out := make([]backendView, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

func (s *Server) backend(_ context.Context, uri string) (any, error) {
	name := strings.TrimPrefix(uri, "kiln://backend/")
	for _, v := range s.backends() {
		if v.Name != name {
			continue
		}
		out := map[string]any{"backend": v}
		var tools []string
		for _, t := range s.opts.Registry.Tools() {
			if t.Backend == name {
				tools = append(tools, t.ID())
			}
		}
		out["tools"] = tools
		if s.opts.Status != nil {
			for _, st := range s.opts.Status.Status() {
				if st.Name == name && st.StderrTail != "" {
					out["stderr_tail"] = strings.Split(st.StderrTail, "\n")
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no backend named %q; read %s for the list", name, uriBackends)
}

func (s *Server) stats() any {
	out := map[string]any{}
	if s.opts.Counter != nil {
		out["call_tool_chain_output"] = s.opts.Counter.Snapshot()
	}
	return out
}
