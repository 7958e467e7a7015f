package server

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/backend"
)

// maxCompletions is the protocol's cap on values in one completion/complete
// answer.
const maxCompletions = 100

// recentLimits are the limits offered for kiln://recent/{limit}.
var recentLimits = []string{"10", "20", "50", "100", "200"}

// completer answers completion/complete for the prompts' and resource
// templates' arguments from the live backend and tool lists.
type completer struct{ s *Server }

// addCompletions installs the completer. The SDK only takes completion as
// server options; applying them here, before the server serves anyone,
// keeps the completion code beside what it completes.
func (s *Server) addCompletions() {
	c := completer{s}
	for _, opt := range []server.ServerOption{
		server.WithCompletions(),
		server.WithPromptCompletionProvider(c),
		server.WithResourceCompletionProvider(c),
	} {
		opt(s.mcp)
	}
}

func (c completer) CompletePromptArgument(ctx context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if p := c.s.pass; p != nil && c.s.opts.Passthrough != nil {
		if ref, ok := p.promptOf(prompt); ok {
			return p.complete(ctx, backend.CompleteRef{Prompt: ref.name}, ref.backend, arg, cc)
		}
	}
	switch {
	case prompt == promptStatus && arg.Name == "backend_name",
		prompt == promptDiscover && arg.Name == "topic":
		return complete(arg.Value, c.backendNames(), nil), nil
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if p := c.s.pass; p != nil && c.s.opts.Passthrough != nil {
		if owner, ok := p.completionOwner(uri); ok {
			return p.complete(ctx, backend.CompleteRef{URI: uri}, owner, arg, cc)
		}
	}
	switch {
	case arg.Name == "backend_name" && (uri == uriBackend || uri == uriBackendTools):
		return complete(arg.Value, c.backendNames(), nil), nil
	case arg.Name == "tool_name" && uri == uriTool:
		tools := c.s.visibleTools(ctx)
		ids := make([]string, len(tools))
		for i, t := range tools {
			ids[i] = t.ID()
		}
		// "get" should offer "files.get_file": the bare name is what a
		// model usually starts typing.
		bare := func(id string) string { _, name, _ := strings.Cut(id, "."); return name }
		return complete(arg.Value, ids, bare), nil
	case arg.Name == "limit" && uri == uriRecentN:
		return complete(arg.Value, recentLimits, nil), nil
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) backendNames() []string {
	views := c.s.backends()
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.Name
	}
	return names
}

// complete offers the candidates that start with value (case-insensitive),
// or whose alt form does, then those that merely contain it, in candidate
// order within each group.
func complete(value string, candidates []string, alt func(string) string) *mcp.Completion {
	v := strings.ToLower(value)
	var prefix, contains []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		switch {
		case strings.HasPrefix(lc, v), alt != nil && strings.HasPrefix(strings.ToLower(alt(c)), v):
			prefix = append(prefix, c)
		case strings.Contains(lc, v):
			contains = append(contains, c)
		}
	}
	all := append(prefix, contains...)
	out := &mcp.Completion{Values: all[:min(len(all), maxCompletions)], Total: len(all)}
	out.HasMore = len(all) > maxCompletions
	if out.Values == nil {
		out.Values = []string{}
	}
	return out
}
