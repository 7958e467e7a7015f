package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The kiln:// resources. Error messages across the gateway point models at
// them, so the URIs are part of kiln's contract with prompts and agents.
const (
	uriOverview     = "kiln://overview"
	uriBackends     = "kiln://backends"
	uriBackend      = "kiln://backend/{backend_name}"
	uriBackendTools = "kiln://backend/{backend_name}/tools"
	uriTools        = "kiln://tools"
	uriTool         = "kiln://tool/{tool_name}"
	uriRecent       = "kiln://recent"
	uriRecentN      = "kiln://recent/{limit}"
	uriStats        = "kiln://stats"
	uriHealth       = "kiln://health"
	uriLLMs         = "kiln://llms"
	uriLLMsFull     = "kiln://llms-full"
	uriChainGuide   = "kiln://call_tool_chain"
)

const (
	mimeJSON     = "application/json"
	mimeMarkdown = "text/markdown"
	mimeText     = "text/plain"
)

// Bounds of kiln://recent/{limit}; the dispatcher keeps 200 calls.
const (
	defaultRecent = 20
	maxRecent     = 200
)

type resourceDef struct {
	uri, name, mime, description string
	get                          func(ctx context.Context, uri string) (any, error)
}

func (s *Server) resourceDefs() (static, templates []resourceDef) {
	static = []resourceDef{
		{uriOverview, "overview", mimeMarkdown,
			"Start here: what kiln is, how many backends (by state) and tools it serves, how to use the meta-tools, what to read next.",
			func(context.Context, string) (any, error) { return s.overview(), nil }},
		{uriBackends, "backends", mimeJSON,
			"Every backend: transport, state and since when, restarts, next retry, probe failures, call counts, drift from the compiled manifest, last error.",
			func(context.Context, string) (any, error) { return s.backends(), nil }},
		{uriTools, "tools", mimeJSON,
			"Every tool ID (backend.tool) with a one-line description, grouped by backend.",
			func(ctx context.Context, _ string) (any, error) { return s.toolsIndex(ctx), nil }},
		{uriRecent, "recent", mimeJSON,
			fmt.Sprintf("The last %d backend calls, newest first: time, tool, duration in ms, outcome. kiln://recent/{limit} shows up to %d.", defaultRecent, maxRecent),
			func(context.Context, string) (any, error) { return s.recent(defaultRecent), nil }},
		{uriStats, "stats", mimeJSON,
			"call_tool_chain output statistics (bytes returned, processed and saved, how often each pipeline stage fired) and calls and errors per backend.",
			func(context.Context, string) (any, error) { return s.stats(), nil }},
		{uriHealth, "health", mimeJSON,
			"Overall verdict (ok, degraded or down) and every backend that cannot take calls, with the reason and the next retry. Read this after a failed call.",
			func(context.Context, string) (any, error) { return s.health(), nil }},
		{uriLLMs, "llms", mimeText,
			"llms.txt-style index: each backend with its state and tool names.",
			func(ctx context.Context, _ string) (any, error) { return s.llms(ctx), nil }},
		{uriLLMsFull, "llms-full", mimeMarkdown,
			"Every tool with its full description and call signature, by backend.",
			func(ctx context.Context, _ string) (any, error) { return s.llmsFull(ctx), nil }},
		{uriChainGuide, "call_tool_chain", mimeMarkdown,
			"How to use call_tool_chain: JSON calls, TypeScript calls and programs, parallel calls, console output, limits, intent and max_output_size, errors, introspection.",
			func(context.Context, string) (any, error) { return s.chainGuide(), nil }},
	}
	templates = []resourceDef{
		{uriBackend, "backend", mimeJSON,
			"One backend in detail: state, counters, last error, the tail of its stderr, its tools.",
			s.backendResource},
		{uriBackendTools, "backend tools", mimeJSON,
			"One backend's tools: first-sentence descriptions, call signatures and examples.",
			s.backendToolsResource},
		{uriTool, "tool", mimeJSON,
			"One tool in full: description, input schema (and output schema, annotations), parameters and a call example. Takes backend.tool or a bare name only one backend has.",
			s.toolResource},
		{uriRecentN, "recent calls", mimeJSON,
			fmt.Sprintf("The last {limit} backend calls (1-%d), newest first.", maxRecent),
			s.recentResource},
	}
	return static, templates
}

func (s *Server) addResources() {
	static, templates := s.resourceDefs()
	for _, d := range static {
		s.mcp.AddResource(mcp.NewResource(d.uri, d.name, mcp.WithResourceDescription(d.description), mcp.WithMIMEType(d.mime)),
			s.serveResource(d))
	}
	for _, d := range templates {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(d.uri, d.name, mcp.WithTemplateDescription(d.description), mcp.WithTemplateMIMEType(d.mime)),
			s.serveResource(d))
	}
}

// serveResource renders what get returns: strings as they are (markdown,
// plain text), anything else as indented JSON.
func (s *Server) serveResource(d resourceDef) func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		v, err := d.get(ctx, req.Params.URI)
		if err != nil {
			return nil, errors.New(s.opts.Scrubber.String(err.Error()))
		}
		text, ok := v.(string)
		if !ok {
			raw, err := json.MarshalIndent(v, "", " ")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", d.uri, err)
			}
			text = string(raw)
		}
		// Backend state carries stderr tails and errors: scrub like results.
		text = s.opts.Scrubber.String(text)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: d.mime, Text: text}}, nil
	}
}

// templateArg extracts the variable of a URI the SDK already matched
// against prefix{var}suffix, percent-decoded (a simple URI-template
// variable cannot hold '/' or most punctuation unencoded).
func templateArg(uri, prefix, suffix string) string {
	v := strings.TrimSuffix(strings.TrimPrefix(uri, prefix), suffix)
	if d, err := url.PathUnescape(v); err == nil {
		return d
	}
	return v
}

// stamp renders a time for a model: RFC 3339 to the second, "" for the zero
// time so that omitempty drops it.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// relative says how far t is from now in whole seconds ("in 12s", "3m4s
// ago"): models have no clock, so an absolute time alone does not tell them
// whether a retry is due.
func relative(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}
