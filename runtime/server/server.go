package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/schema"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Catalog is the live tool set behind the meta-tools; *catalog.Catalog
// is one. A request reads View once, so its hits, examples and suggestions
// all come from the same moment however the catalog changes meanwhile.
type Catalog interface {
	View() *catalog.View
	// Drifts reports backends whose live tools differ from the compiled
	// manifest.
	Drifts() map[string]catalog.Drift
	// Bare reports whether a backend's tools are exposed under their own
	// names, runtime registrations included.
	Bare(backend string) bool
}

// StatusSource reports backend connection states and recent calls;
// *dispatch.Dispatcher is one.
type StatusSource interface {
	Status() []dispatch.Status
	Recent(n int) []dispatch.CallRecord
}

// Options wire the server to the rest of the gateway.
type Options struct {
	Name, Version string
	Config        *config.Config
	Registry      *registry.Registry
	Status        StatusSource
	Chain         *chain.Engine
	// Catalog is the live tool set; nil serves the registry as it is,
	// without search or drift, and reads backends.NAME.bare from Config.
	Catalog Catalog
	// Registrar adds and removes backends at run time; nil refuses
	// register_manual.
	Registrar Registrar
	// Boost, when set, multiplies each tool's search score (the usage
	// boost).
	Boost func(id string) float64
	// Counter holds call_tool_chain's output byte counts for kiln://stats.
	Counter *pipeline.Counter
	// Scrubber redacts secrets from every result, resource and prompt;
	// nil passes text through.
	Scrubber *scrub.Scrubber
	// Exposed maps compiled tools to their exposed names
	// (generated.ExposedNames) for gateway.expose direct and hybrid; tools
	// it does not name are named at run time by the same function.
	Exposed map[string]string
	// Passthrough reaches the backends' resources, prompts, completions,
	// subscriptions and log levels; nil lists the compiled ones only.
	Passthrough Passthrough
	Logger      *slog.Logger
	// SessionEnded is told when a client session ends (closed, deleted or
	// evicted); the dispatcher tells the backends. Optional.
	SessionEnded func(id string)
	// RootsChanged is told when client session sid sends
	// notifications/roots/list_changed; the dispatcher passes it on to the
	// backends. Optional.
	RootsChanged func(ctx context.Context, sid string)
	// SharedState, when set, reports why a fleet's shared state
	// (gateway.state_url) is unreachable, or nil; kiln://health shows it.
	SharedState func() error
	// Audit, when set, reports why the audit log is not keeping up (a
	// full disk); kiln://health is degraded meanwhile.
	Audit func() error
	// Telemetry observes meta-tool calls and sessions; nil observes
	// nothing. *telemetry.Telemetry is one.
	Telemetry Telemetry
	// Policy hides the tools a request's identity may not use from every
	// listing (policyview.go); nil shows every tool. The same rules must
	// refuse the calls: Chain's Caller is a *policy.Guard.
	Policy Policy
}

// Telemetry is told of each tool call, each session and each tool search.
// StartTool (a meta-tool) and StartDirect (a backend tool exposed by name)
// get the W3C trace context the client sent in _meta, return the context
// the call runs in, and end is called once with the outcome.
type Telemetry interface {
	StartTool(ctx context.Context, tool, traceparent, tracestate string) (_ context.Context, end func(isError bool))
	StartDirect(ctx context.Context, tool, traceparent, tracestate string) (_ context.Context, end func(isError bool))
	Sessions(delta int)
	Searched(took time.Duration)
}

// Registrar adds and removes backends at run time; *catalog.Catalog is one.
type Registrar interface {
	Register(ctx context.Context, name string, def json.RawMessage) (*manifest.Manifest, error)
	Deregister(name string) error
}

// Server is the MCP front door.
type Server struct {
	opts  Options
	log   *slog.Logger
	mcp   *server.MCPServer
	valid *schema.Validator
	exp   *exposure           // nil in meta mode
	meta  []server.ServerTool // the meta-tools with their handlers
	// hooks are the SDK server's hooks, shared by the features that need
	// them.
	hooks *server.Hooks
	// subsHooks counts kiln's own request-initialization hooks, which only
	// act on subscription requests (fastCall may skip them for tools/call).
	subsHooks int
	lastMeta  atomic.Pointer[metaInfo] // fastCall's last derived _meta
	// serverInfo is fastCall's encoded serverInfo (serverInfoJSON).
	serverInfo     []byte
	serverInfoOnce sync.Once
	pass           *passthru
	// sessions and exchanges carry backends' requests to clients
	// (clientreq.go, mrtr.go).
	sessions  sessions
	exchanges exchanges
}

const instructions = `kiln gives you many backend MCP servers' tools through a few meta-tools.
1. search_tools with a plain-words task to find tools (names look like backend.tool).
2. tool_info for a tool's parameters (detail "full" for the exact schema).
3. call_tool_chain to run it: {"tool": "backend.tool", "arguments": {...}}, or TypeScript such as
   const r = await backend.tool({...}); return r;  (many calls, loops and conditions in one run).`

// New builds the server and registers the meta-tools.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "kiln"
	}
	s := &Server{opts: opts, log: log, valid: schema.New(), exp: newExposure(opts.Config), hooks: &server.Hooks{}}
	s.clientHooks(s.hooks)
	s.sessionHooks(s.hooks)
	s.hooks.AddAfterListTools(s.filterListed)
	s.hooks.AddAfterListResources(s.filterResources)
	s.hooks.AddAfterListResourceTemplates(s.filterTemplates)
	s.hooks.AddAfterListPrompts(s.filterPrompts)
	s.mcp = server.NewMCPServer(opts.Name, opts.Version,
		// Only direct and hybrid lists change at run time.
		server.WithToolCapabilities(s.exp != nil),
		// Backends' resources and prompts pass through: subscriptions are
		// forwarded, and their lists change as backends connect.
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithHooks(s.hooks),
		server.WithLogging(),
		server.WithInstructions(s.instructions()),
	)
	s.mcp.AddNotificationHandler(string(mcp.MethodNotificationRootsListChanged), s.rootsChanged)
	s.mcp.AddNotificationHandler(string(mcp.MethodNotificationInitialized), s.initialized)
	handlers := map[string]func(context.Context, json.RawMessage) *toolcall.Result{
		toolSearch:     s.searchTools,
		toolList:       s.listToolsMeta,
		toolInfo:       s.toolInfo,
		toolKeys:       s.requiredKeys,
		toolChain:      s.callToolChain,
		toolRegister:   s.registerManual,
		toolDeregister: s.deregisterManual,
	}
	s.addResources()
	s.addPrompts()
	s.addPassthrough()
	limits := s.guideLimits()
	for _, mt := range metaTools {
		mt = mt.withLimits(limits)
		if err := s.valid.Compile(mt.name, json.RawMessage(mt.schema)); err != nil {
			panic(fmt.Sprintf("meta-tool %s: invalid built-in schema: %v", mt.name, err)) // programmer error at init
		}
		s.meta = append(s.meta, server.ServerTool{
			Tool:    mcp.NewToolWithRawSchema(mt.name, mt.description, json.RawMessage(mt.schema)),
			Handler: s.handle(mt, handlers[mt.name]),
		})
	}
	if s.listsMeta() {
		s.mcp.AddTools(s.meta...)
	}
	s.warnPins()
	s.SyncTools()
	s.subsHooks = len(s.hooks.OnRequestInitialization)
	return s
}

// handle validates the meta-tool's arguments with kiln's own validator
// (the SDK's renders errors no model can use), recovers panics into an
// internal-error result, and converts kiln's result type.
func (s *Server) handle(mt metaTool, h func(context.Context, json.RawMessage) *toolcall.Result) server.ToolHandlerFunc {
	schema := json.RawMessage(mt.schema)
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("meta-tool panicked", "tool", mt.name, "panic", p, "stack", string(debug.Stack()))
				res = mcp.NewToolResultError(fmt.Sprintf("%s failed with an internal error; the gateway logged it. Try again or use a different tool.", mt.name))
				err = nil
			}
		}()
		raw := claimRawAnswer(ctx)
		args := req.Params.RawArguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		if verr := s.valid.Validate(mt.name, schema, args); verr != nil {
			return toMCP(s.opts.Scrubber.Result(toolcall.Errorf("%s: %v", mt.name, verr)))
		}
		if t := s.opts.Telemetry; t != nil {
			var end func(bool)
			ctx, end = t.StartTool(ctx, mt.name, metaString(req, "traceparent"), metaString(req, "tracestate"))
			defer func() { end(res == nil || res.IsError) }()
		}
		out, ask := s.serveCall(ctx, req, args, h, mt.name == toolChain)
		if ask != nil {
			return ask, nil
		}
		if mt.name != toolChain {
			// call_tool_chain scrubs inside the engine, before truncation
			// (chain.Options.Scrub); scanning again would cost, not protect.
			out = s.opts.Scrubber.Result(out)
		}
		return answer(raw, out)
	}
}

// toMCP converts a kiln result to the SDK's type without decoding it: each
// content block goes out as the bytes kiln holds (every kind, including
// ones the SDK does not model; rawContent, as passthrough prompts use),
// and structuredContent as it is. A round
// trip through the SDK's parser cost a tier-1 call an encode and two
// decodes of its result (BenchmarkEchoHop profile).
func toMCP(r *toolcall.Result) (*mcp.CallToolResult, error) {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, len(r.Content))}
	for i, c := range r.Content {
		out.Content[i] = rawContent{raw: c}
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		out.RawStructuredContent = r.StructuredContent
	}
	if len(r.Meta) > 0 && string(r.Meta) != "null" {
		out.Meta = &mcp.Meta{}
		if err := json.Unmarshal(r.Meta, out.Meta); err != nil {
			return nil, fmt.Errorf("result _meta: %w", err)
		}
	}
	return out, nil
}

// Handler serves streamable HTTP at /mcp and legacy SSE at /sse and
// /message.
func (s *Server) Handler() http.Handler { return s.HandlerAt("/mcp", "/sse", "/message") }

// HandlerAt serves streamable HTTP at mcpPath and legacy SSE at ssePath
// (posting to messagePath): a profile's server is mounted at /mcp/NAME.
func (s *Server) HandlerAt(mcpPath, ssePath, messagePath string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(mcpPath, s.cancels(checkedHTTP(notFoundHTTP(server.NewStreamableHTTPServer(s.mcp, server.WithEndpointPath(mcpPath)), s.patchOut))))
	sse := server.NewSSEServer(s.mcp, server.WithSSEEndpoint(ssePath), server.WithMessageEndpoint(messagePath))
	mux.Handle(ssePath, patchSSE(sse.SSEHandler(), s.patchOut))
	mux.Handle(messagePath, s.cancels(checkedHTTP(sse.MessageHandler())))
	return mux
}
