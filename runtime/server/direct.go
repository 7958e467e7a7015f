package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Exposure modes (gateway.expose). In direct mode the meta-tools are not
// listed: a client that sees every tool needs no search, and a model
// shown search_tools beside the real tools tends to search for tools it
// can already see. Hybrid is the mode for both; a hybrid config pinning
// backend.* for every backend lists everything plus the meta-tools.

// exposure is the set of backend tools listed as real MCP tools, and the
// names given to them. Names stay with their tool while it exists: a
// tool that appears later is named around the ones already given out,
// never the reverse, so a client's view only grows or shrinks.
type exposure struct {
	mode string
	pins []string

	mu     sync.Mutex
	names  map[exposeKey]string // every named tool's exposed name
	listed map[string]string    // exposed name -> tool definition JSON, as listed now
	// tools maps each listed exposed name to its tool, for the policy's
	// per-request filter of tools/list (filterListed).
	tools atomic.Pointer[map[string]*registry.Tool]
}

// exposeKey is a tool as named: the same tool turned bare is a new one.
type exposeKey struct {
	id   string
	bare bool
}

func newExposure(cfg *config.Config) *exposure {
	if cfg == nil || cfg.Gateway.Expose == "" || cfg.Gateway.Expose == config.ExposeMeta {
		return nil
	}
	return &exposure{mode: cfg.Gateway.Expose, pins: cfg.Gateway.Pin, names: map[exposeKey]string{}}
}

// lists reports whether the mode lists the tool.
func (e *exposure) lists(t *registry.Tool) bool {
	if t.TaskRequired() {
		return false // dispatch refuses task-only tools; listing them would only fail
	}
	return e.mode == config.ExposeDirect || pinMatch(e.pins, t.Backend, t.Name) != ""
}

// pinMatch returns the first pin naming backend.tool, or "".
func pinMatch(pins []string, backend, tool string) string {
	for _, p := range pins {
		if p == backend+".*" || p == backend+"."+tool {
			return p
		}
	}
	return ""
}

// listsMeta reports whether the meta-tools are listed.
func (s *Server) listsMeta() bool { return s.exp == nil || s.exp.mode != config.ExposeDirect }

// bare reports whether a backend's tools go under their own names.
func (s *Server) bare(backend string) bool {
	if s.opts.Catalog != nil {
		return s.opts.Catalog.Bare(backend)
	}
	if s.opts.Config != nil {
		if b, ok := s.opts.Config.Backend(backend); ok {
			return b.Bare
		}
	}
	return false
}

// SyncTools lists the backend tools the exposure mode shows as they are in
// the registry now. When the list changed, clients get one
// notifications/tools/list_changed. The catalog calls it after every
// change of the live tool set; it is a no-op in meta mode.
func (s *Server) SyncTools() {
	e := s.exp
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var shown []*registry.Tool
	for _, t := range s.opts.Registry.Tools() {
		if e.lists(t) {
			shown = append(shown, t)
		}
	}
	names := s.nameLocked(shown)
	next := make(map[string]string, len(shown))
	byName := make(map[string]*registry.Tool, len(shown))
	var tools []server.ServerTool
	for _, t := range shown {
		name := names[exposeKey{t.ID(), s.bare(t.Backend)}]
		if !jsonObject(t.InputSchema) || len(t.OutputSchema) > 0 && !jsonObject(t.OutputSchema) {
			// A client decoding tools/list fails on the whole list over
			// one non-object schema (a live backend's, served under drift:
			// warn or follow, or with no review), so the tool is left out.
			s.log.Warn("backend tool not listed: its input or output schema is not a valid schema object", "tool", t.ID())
			continue
		}
		mt := mcpTool(name, t)
		if err := mcp.ValidateParamHeaderAnnotations(&mt); err != nil {
			// The SDK would panic on it; a backend's mistake must not.
			s.log.Warn("backend tool not listed: invalid x-mcp-header annotations in its schema", "tool", t.ID(), "err", err)
			continue
		}
		def, err := json.Marshal(mt)
		if err != nil {
			s.log.Warn("backend tool cannot be listed: its recorded definition does not encode", "tool", t.ID(), "err", err)
			continue
		}
		next[name] = string(def)
		byName[name] = t
		tools = append(tools, server.ServerTool{Tool: mt, Handler: s.directHandler(name, t.Backend, t.Name)})
	}
	e.tools.Store(&byName)
	if maps.Equal(next, e.listed) {
		return
	}
	e.listed = next
	if s.listsMeta() {
		tools = append(tools, s.meta...)
	}
	// One SetTools, so a change is one list_changed however many tools
	// it touches.
	s.mcp.SetTools(tools...)
	s.log.Debug("exposed tools changed", "mode", e.mode, "tools", len(next))
}

// nameLocked names the shown tools: names already given out stay; the
// compiled table (generated.ExposedNames) names compiled tools of
// non-bare backends; the rest are named together by registry.ExposeNames
// around those.
func (s *Server) nameLocked(shown []*registry.Tool) map[exposeKey]string {
	e := s.exp
	keep := map[exposeKey]string{}
	used := map[string]bool{}
	for _, t := range shown {
		k := exposeKey{t.ID(), s.bare(t.Backend)}
		if n, ok := e.names[k]; ok {
			keep[k] = n
			used[n] = true
		}
	}
	var fresh []registry.ExposeTool
	for _, t := range shown {
		k := exposeKey{t.ID(), s.bare(t.Backend)}
		if _, ok := keep[k]; ok {
			continue
		}
		if n, ok := s.opts.Exposed[k.id]; ok && !k.bare && !used[n] && !s.reserved(n) {
			keep[k] = n
			used[n] = true
			continue
		}
		fresh = append(fresh, registry.ExposeTool{Backend: t.Backend, Tool: t.Name, Bare: k.bare})
	}
	named, collisions := registry.ExposeNames(fresh, func(n string) bool { return used[n] || s.reserved(n) })
	for _, c := range collisions {
		s.log.Warn("exposed tool names collide; the tools named later get a hash suffix",
			"name", c.Name, "tools", strings.Join(c.IDs, ","), "already_taken", c.Taken)
	}
	for _, t := range fresh {
		keep[exposeKey{t.ID(), t.Bare}] = named[t.ID()]
	}
	e.names = keep
	return keep
}

// reserved names are the meta-tools', in every mode, so a name never
// changes owner when a config switches between direct and hybrid.
func (s *Server) reserved(name string) bool {
	return slices.ContainsFunc(metaTools, func(m metaTool) bool { return m.name == name })
}

// jsonObject reports whether raw is a schema object a client decodes: a
// JSON object whose type, properties and required have the shapes
// mcp-go's tool schema type (and every client's) requires.
func jsonObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	var schema mcp.ToolInputSchema
	return json.Unmarshal(raw, &m) == nil && m != nil && json.Unmarshal(raw, &schema) == nil
}

// mcpTool is a backend tool as listed under name, with everything its
// backend recorded: schemas as raw JSON, title, annotations, icons.
func mcpTool(name string, t *registry.Tool) mcp.Tool {
	mt := mcp.Tool{Name: name, Title: t.Title, Description: t.Description, RawInputSchema: t.InputSchema}
	if len(t.OutputSchema) > 0 {
		mt.RawOutputSchema = t.OutputSchema
	}
	if len(t.Annotations) > 0 {
		_ = json.Unmarshal(t.Annotations, &mt.Annotations) // hints a backend got wrong are dropped, not fatal
	}
	if len(t.Icons) > 0 {
		_ = json.Unmarshal(t.Icons, &mt.Icons)
	}
	if len(t.Execution) > 0 {
		var ex mcp.ToolExecution
		if json.Unmarshal(t.Execution, &ex) == nil {
			mt.Execution = &ex
		}
	}
	return mt
}

// directHandler calls backend.tool for a client that called it by name,
// on tier 1's path (chain.Engine.Call).
func (s *Server) directHandler(name, backend, tool string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("direct tool call panicked", "tool", name, "panic", p, "stack", string(debug.Stack()))
				res = mcp.NewToolResultError(fmt.Sprintf("%s failed with an internal error; the gateway logged it. Try again.", name))
				err = nil
			}
		}()
		raw := claimRawAnswer(ctx)
		if t := s.opts.Telemetry; t != nil {
			var end func(bool)
			ctx, end = t.StartDirect(ctx, name, metaString(req, "traceparent"), metaString(req, "tracestate"))
			defer func() { end(res == nil || res.IsError) }()
		}
		call := func(ctx context.Context, args json.RawMessage) *toolcall.Result {
			return s.opts.Chain.Call(ctx, name, backend, tool, args)
		}
		round := newRound(ctx, req)
		if round != nil {
			ctx = withRound(ctx, round)
			if st := req.Params.RequestState; st != "" && !strings.HasPrefix(st, exchangePrefix) {
				// Not kiln's state: the backend's own, from a round it
				// asked (round.go). Kiln's own, known or not, goes to
				// serveCall, which resumes it or says it is gone.
				return roundResult(ctx, s.opts.Scrubber, round, call(s.observe(ctx, req), req.Params.RawArguments))
			}
		}
		// serveCall carries progress, logs and the backend's questions to
		// this client, as for call_tool_chain (2026-07-28 rounds included).
		out, ask := s.serveCall(ctx, req, req.Params.RawArguments, call, true)
		if ask != nil {
			return ask, nil
		}
		if round != nil {
			return roundResult(ctx, s.opts.Scrubber, round, out)
		}
		return answer(raw, out)
	}
}

// warnPins logs each pin that names no tool kiln knows at start, and why.
func (s *Server) warnPins() {
	e := s.exp
	if e == nil || e.mode != config.ExposeHybrid {
		return
	}
	for _, p := range e.pins {
		backend, tool, _ := strings.Cut(p, ".")
		matched := slices.ContainsFunc(s.opts.Registry.Tools(), func(t *registry.Tool) bool { return pinMatch([]string{p}, t.Backend, t.Name) != "" })
		switch _, known := s.opts.Registry.Backend(backend); {
		case matched:
		case !known && s.opts.Config != nil && declared(s.opts.Config, backend):
			s.log.Warn("gateway.pin names a backend that is not compiled in; the pin applies once it connects", "pin", p, "backend", backend)
		case !known:
			s.log.Warn("gateway.pin matches no tool: no backend has that name; fix or remove the pin", "pin", p, "backend", backend,
				"backends", strings.Join(s.opts.Registry.BackendNames(), ","))
		default:
			hint := registry.Closest(tool, toolNames(s.opts.Registry, backend), 3)
			for i, h := range hint {
				hint[i] = backend + "." + h
			}
			s.log.Warn("gateway.pin matches no tool: the backend has no tool of that name; fix or remove the pin", "pin", p,
				"did_you_mean", strings.Join(hint, ","))
		}
	}
}

func declared(cfg *config.Config, backend string) bool {
	_, ok := cfg.Backend(backend)
	return ok
}

func toolNames(reg *registry.Registry, backend string) []string {
	var out []string
	for _, t := range reg.Tools() {
		if t.Backend == backend {
			out = append(out, t.Name)
		}
	}
	return out
}

// CheckExposure reports a config whose exposure mode cannot name the
// compiled tools: two bare backends publishing the same tool name. The
// error names the file, both backends and the fix. Tools that appear at
// run time cannot fail the config; a clash then gives the later tool a
// hash suffix and is logged.
func CheckExposure(cfg *config.Config, reg *registry.Registry) error {
	if cfg.Gateway.Expose == "" || cfg.Gateway.Expose == config.ExposeMeta {
		return nil
	}
	owners := map[string][]string{} // exposed base name -> bare tool IDs
	for _, t := range reg.Tools() {
		b, ok := cfg.Backend(t.Backend)
		if !ok || !b.Bare || !b.Enabled {
			continue
		}
		n := registry.ExposedBase(registry.ExposeTool{Backend: t.Backend, Tool: t.Name, Bare: true})
		owners[n] = append(owners[n], t.ID())
	}
	var problems []string
	for _, n := range slices.Sorted(maps.Keys(owners)) {
		ids := owners[n]
		var backends []string
		for _, id := range ids {
			b, _, _ := strings.Cut(id, ".")
			if !slices.Contains(backends, b) {
				backends = append(backends, b)
			}
		}
		if len(backends) < 2 {
			continue // one backend's own near-duplicates get suffixes
		}
		keys := make([]string, len(backends))
		for i, b := range backends {
			keys[i] = "backends." + b + ".bare"
		}
		problems = append(problems, fmt.Sprintf("%s: %s: bare backends %s all publish a tool named %q (%s); set bare: false on all but one of them",
			cfg.Path, strings.Join(keys, ", "), strings.Join(backends, ", "), n, strings.Join(ids, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "\n"))
}

const directInstructions = `kiln lists its backend MCP servers' tools directly, each named backend__tool
(or the tool's own name for backends configured as bare). Call them like any tool.`

const hybridInstructions = instructions + `
Some tools are also listed directly as backend__tool; call those like any tool.`

// instructions are the server instructions for the exposure mode.
func (s *Server) instructions() string {
	switch {
	case s.exp == nil:
		return instructions
	case s.exp.mode == config.ExposeDirect:
		return directInstructions
	}
	return hybridInstructions
}

// filterListed drops from a tools/list answer the backend tools the
// request's identity may not use (mcp-go lists every registered tool; the
// meta-tools stay, their calls are decided tool by tool).
func (s *Server) filterListed(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	if s.exp == nil || s.opts.Policy == nil || res == nil {
		return
	}
	byName := s.exp.tools.Load()
	if byName == nil {
		return
	}
	kept := make([]mcp.Tool, 0, len(res.Tools)) // res.Tools may be the server's own
	for _, mt := range res.Tools {
		if t, ok := (*byName)[mt.Name]; !ok || s.visible(ctx, t) {
			kept = append(kept, mt)
		}
	}
	res.Tools = kept
}
