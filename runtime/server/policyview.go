package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// Policy decides which tools a request's identity may use; *policy.Guard
// is one (it also refuses the calls, as the chain engine's Caller). A
// tool it denies does not exist for that identity: no listing, search
// hit, tool_info or kiln://tool answer names it.
type Policy interface {
	Allows(ctx context.Context, t policy.Tool) bool
	// AllowsKey decides a backend resource or prompt
	// (policy.ResourceKey, policy.PromptKey).
	AllowsKey(ctx context.Context, key string) bool
}

// visible reports whether ctx's identity may see t.
func (s *Server) visible(ctx context.Context, t *registry.Tool) bool {
	p := s.opts.Policy
	return p == nil || p.Allows(ctx, policy.Tool{Backend: t.Backend, Name: t.Name, Annotations: t.Annotations})
}

// visibleTools is the registry's tools ctx's identity may see, sorted by
// ID as Registry.Tools is.
func (s *Server) visibleTools(ctx context.Context) []*registry.Tool {
	all := s.opts.Registry.Tools()
	if s.opts.Policy == nil {
		return all
	}
	out := make([]*registry.Tool, 0, len(all))
	for _, t := range all {
		if s.visible(ctx, t) {
			out = append(out, t)
		}
	}
	return out
}

// resolveVisible resolves name as Registry.Resolve does, answering a tool
// ctx's identity may not see exactly as a tool that does not exist.
func (s *Server) resolveVisible(ctx context.Context, name string) (*registry.Tool, error) {
	t, err := s.opts.Registry.Resolve(name)
	if err != nil {
		return nil, err
	}
	if !s.visible(ctx, t) {
		return nil, fmt.Errorf("%w: %q; call search_tools to find the tools you may use", registry.ErrNotFound, name)
	}
	return t, nil
}

// boostFor is the search boost for ctx's identity: a tool it may not see
// scores 0, so allowed tools fill the hits before the rest, which
// visibleHits then drops.
func (s *Server) boostFor(ctx context.Context) func(id string) float64 {
	if s.opts.Policy == nil {
		return s.opts.Boost
	}
	return func(id string) float64 {
		t, err := s.opts.Registry.Resolve(id)
		if err != nil || !s.visible(ctx, t) {
			return 0
		}
		if s.opts.Boost != nil {
			return s.opts.Boost(id)
		}
		return 1
	}
}

// allowsKey reports whether ctx's identity may use a backend resource or
// prompt; kiln's own are not the policy's.
func (s *Server) allowsKey(ctx context.Context, key string) bool {
	return s.opts.Policy == nil || s.opts.Policy.AllowsKey(ctx, key)
}

// filterResources, filterTemplates and filterPrompts drop from the
// listings the backends' resources, templates and prompts ctx's identity
// may not use.
func (s *Server) filterResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if s.opts.Policy == nil || res == nil || s.pass == nil {
		return
	}
	kept := make([]mcp.Resource, 0, len(res.Resources))
	for _, r := range res.Resources {
		if _, backend := s.pass.owner(r.URI); !backend || s.allowsKey(ctx, policy.ResourceKey(r.URI)) {
			kept = append(kept, r)
		}
	}
	res.Resources = kept
}

func (s *Server) filterTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if s.opts.Policy == nil || res == nil || s.pass == nil {
		return
	}
	kept := make([]mcp.ResourceTemplate, 0, len(res.ResourceTemplates))
	for _, t := range res.ResourceTemplates {
		raw := ""
		if t.URITemplate != nil {
			raw = t.URITemplate.Raw()
		}
		if strings.HasPrefix(raw, "kiln://") || s.allowsKey(ctx, policy.ResourceKey(raw)) {
			kept = append(kept, t)
		}
	}
	res.ResourceTemplates = kept
}

func (s *Server) filterPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
	if s.opts.Policy == nil || res == nil || s.pass == nil {
		return
	}
	kept := make([]mcp.Prompt, 0, len(res.Prompts))
	for _, p := range res.Prompts {
		if ref, backend := s.pass.promptOf(p.Name); !backend || s.allowsKey(ctx, policy.PromptKey(ref.backend, ref.name)) {
			kept = append(kept, p)
		}
	}
	res.Prompts = kept
}
