package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Tier says which path ran a call_tool_chain request.
type Tier int

// The execution tiers, cheapest first.
const (
	TierJSON    Tier = 1 // JSON tool call
	TierLiteral Tier = 2 // one TypeScript call, parsed without an engine
	TierSandbox Tier = 3 // full program in the goja sandbox
)

// Request is one call_tool_chain invocation.
type Request struct {
	Code string
	// Timeout bounds the whole run; zero means the engine default.
	Timeout time.Duration
	// MaxOutputSize caps the returned text in UTF-8 bytes; zero means the
	// engine default.
	MaxOutputSize int
	// Intent, when set, lets the pipeline keep only matching paragraphs of
	// a large output.
	Intent string
}

// Options configure an Engine.
type Options struct {
	Caller   toolcall.Caller
	Registry *registry.Registry
	// Catalog holds the sandbox bridge as it stands; nil disables tier 2
	// and runs programs against the compiled preamble.
	Catalog Catalog
	// Sandbox runs tier-3 programs; nil means JSON and tier-2 calls only.
	Sandbox Sandbox
	// DefaultTimeout applies when a request names none; MaxTimeout caps
	// what a request may ask for. Zero takes gateway.sandbox's defaults
	// (config.SandboxDefaults); a gateway passes its sandbox's limits.
	DefaultTimeout, MaxTimeout time.Duration
	// Output shapes every result before it reaches the model; a request's
	// intent and max_output_size override its fields.
	Output pipeline.Options
	// Counter, when set, accumulates the pipeline's byte counts for
	// kiln://stats.
	Counter *pipeline.Counter
	// Scrub, when set, redacts secrets from a result before the pipeline
	// shrinks it: a secret cut in two by truncation no longer matches any
	// pattern.
	Scrub  func(*toolcall.Result) *toolcall.Result
	Logger *slog.Logger
	// OnTier, when set, is told which tier runs a request before it runs;
	// the context it returns carries the calls (telemetry's tier span).
	OnTier func(ctx context.Context, tier Tier) (context.Context, func())
	// Policy, when set, says which tools a request's identity may use: a
	// program's bound backend objects, __interfaces and
	// __getToolInterface lose the others (hidden). The calls are refused
	// by Caller, a *policy.Guard, whatever a program does.
	Policy Policy
}

// Policy decides which tools a request's identity may use; *policy.Guard
// is one.
type Policy interface {
	Allows(ctx context.Context, t policy.Tool) bool
}

// Catalog is where the engine finds the sandbox bridge; *catalog.Catalog
// is one. A request reads View once, so every call of one program sees the
// same backends.
type Catalog interface {
	View() *catalog.View
}

// bridging is the sandbox bridge at one moment.
type bridging struct {
	// resolver maps identifiers in TypeScript to backend and tool names
	// (the bridge's table); nil disables tier 2.
	resolver Resolver
	// backends are those the sandbox preamble binds, so tier 2 can answer
	// introspection exactly as the sandbox would.
	backends []bridge.Backend
	// extraPreamble rebinds backends that changed since emit; "" when none
	// did. extraBindings is what it binds, for the sandbox's error hints.
	extraPreamble string
	extraBindings []bridge.Binding
	// table names the bound identifiers, for hiding the tools a
	// request's identity may not use (hidden); nil without a catalog.
	table *bridge.Table
}

func (e *Engine) bridging() bridging {
	if e.opts.Catalog == nil {
		return bridging{}
	}
	v := e.opts.Catalog.View()
	br := bridging{backends: v.Bridge, extraPreamble: v.Extra, table: v.Table}
	if v.Table != nil {
		br.resolver = v.Table
		if v.Extra != "" {
			br.extraBindings = v.Table.Bindings()
		}
	}
	return br
}

// Engine runs call_tool_chain requests. It is safe for concurrent use.
type Engine struct {
	opts Options
	log  *slog.Logger
}

// New returns an engine.
func New(opts Options) *Engine {
	def := config.SandboxDefaults()
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = def.Timeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = def.MaxTimeout
	}
	// As the sandbox does: a cap below the default would cut every run.
	opts.MaxTimeout = max(opts.MaxTimeout, opts.DefaultTimeout)
	if opts.Output == (pipeline.Options{}) {
		opts.Output = pipeline.DefaultOptions()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{opts: opts, log: log}
}

// Run executes req and always returns a result: failures come back as
// isError results that say what to do next, never as Go errors, because
// the caller is a model reading text.
func (e *Engine) Run(ctx context.Context, req Request) *toolcall.Result {
	res, tier := e.run(ctx, req)
	if e.opts.Scrub != nil {
		res = e.opts.Scrub(res)
	}
	if req.Timeout > e.opts.MaxTimeout {
		res = withNote(res, fmt.Sprintf("[kiln: the requested timeout %s is above gateway.sandbox.max_timeout (%s); this run was limited to %s]",
			req.Timeout, e.opts.MaxTimeout, e.opts.MaxTimeout))
	}
	out := e.opts.Output
	out.Intent = req.Intent
	if req.MaxOutputSize > 0 {
		out.MaxOutputSize = req.MaxOutputSize
		// A caller who asks for more than the shrinking thresholds wants
		// the output whole up to that size: raise them with the cap, or
		// any value would still come back cut at TruncateAt.
		out.TruncateAt = max(out.TruncateAt, req.MaxOutputSize)
		out.ChunkThreshold = max(out.ChunkThreshold, req.MaxOutputSize)
	}
	res, st := pipeline.Result(res, out)
	if e.opts.Counter != nil {
		e.opts.Counter.Add(st)
	}
	if tier != 0 {
		res = tag(res, tier)
	}
	return res
}

func (e *Engine) run(ctx context.Context, req Request) (*toolcall.Result, Tier) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = e.opts.DefaultTimeout
	}
	timeout = min(timeout, e.opts.MaxTimeout)
	// The sandbox enforces tier 3's timeout itself and tells a timeout
	// from a client's cancel; tiers 1 and 2 get the deadline here.
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if call, ok, err := parseJSONCall(req.Code); ok {
		if err != nil {
			return toolcall.Errorf("call_tool_chain: %v", err), TierJSON
		}
		tctx, end := e.enter(tctx, TierJSON)
		defer end()
		return e.callJSON(tctx, call), TierJSON
	}
	// One view of the bridge for the whole request, so a registration
	// landing meanwhile cannot split tier 2 and tier 3.
	br := e.bridging()
	if res, ok := e.literal(tctx, req.Code, br); ok {
		return res, TierLiteral
	}
	ctx, end := e.enter(ctx, TierSandbox)
	defer end()
	return e.program(ctx, req.Code, timeout, br), TierSandbox
}

// enter reports the tier to Options.OnTier.
func (e *Engine) enter(ctx context.Context, t Tier) (context.Context, func()) {
	if e.opts.OnTier == nil {
		return ctx, func() {}
	}
	return e.opts.OnTier(ctx, t)
}

func (e *Engine) callJSON(ctx context.Context, call jsonCall) *toolcall.Result {
	backend, tool, err := e.resolve(call.Tool)
	if err != nil {
		return toolcall.Errorf("call_tool_chain: %v", err)
	}
	res, err := e.opts.Caller.CallTool(ctx, backend, tool, call.Args)
	if err != nil {
		return errorResult(err)
	}
	return res
}

// resolve finds the tool a JSON call names. A "backend.tool" the registry
// does not know yet still goes to the dispatcher, which knows whether its
// backend is still connecting (a backend not compiled in lists its tools
// only then) and answers "not found" itself otherwise.
func (e *Engine) resolve(name string) (backend, tool string, err error) {
	t, err := e.opts.Registry.Resolve(name)
	if err == nil {
		return t.Backend, t.Name, nil
	}
	if b, rest, ok := strings.Cut(name, "."); ok && b != "" && rest != "" {
		return b, rest, nil
	}
	return "", "", err
}

// errorResult turns a dispatch failure into the text a model reads. The
// dispatcher's errors already say what happened and what to do; only a
// bare context error needs words added.
func errorResult(err error) *toolcall.Result {
	if err == context.DeadlineExceeded {
		return toolcall.Errorf("call_tool_chain timed out; pass a larger timeout (milliseconds) or split the work")
	}
	return toolcall.Errorf("%s", strings.TrimSpace(err.Error()))
}

// withNote puts a text block of kiln's own before the result's content,
// where truncation keeps it.
func withNote(r *toolcall.Result, note string) *toolcall.Result {
	out := *r
	out.Content = append([]json.RawMessage{toolcall.Text(note).Content[0]}, r.Content...)
	return &out
}

// tierMetas are the _meta of a result that carried none, by tier: built
// once, not per call. Their capacity is their length, so an append by a
// later stage copies instead of writing into the shared bytes.
var tierMetas = func() (m [TierSandbox + 1]json.RawMessage) {
	for t := TierJSON; t <= TierSandbox; t++ {
		b := []byte(`{"kiln/tier":` + strconv.Itoa(int(t)) + `}`)
		m[t] = b[:len(b):len(b)]
	}
	return m
}()

func tierMeta(tier Tier) json.RawMessage {
	if tier >= TierJSON && tier <= TierSandbox {
		return tierMetas[tier]
	}
	return json.RawMessage(`{"kiln/tier":` + strconv.Itoa(int(tier)) + `}`)
}

// tag records the tier in the result's _meta, keeping any _meta the
// backend sent.
func tag(r *toolcall.Result, tier Tier) *toolcall.Result {
	out := *r
	if m := bytes.TrimSpace(r.Meta); len(m) == 0 || string(m) == "null" || string(m) == "{}" {
		// Most results carry no _meta: no map to build and encode.
		out.Meta = tierMeta(tier)
		return &out
	}
	meta := map[string]json.RawMessage{}
	if len(r.Meta) > 0 {
		if json.Unmarshal(r.Meta, &meta) != nil {
			meta = map[string]json.RawMessage{}
		}
	}
	meta["kiln/tier"] = json.RawMessage(fmt.Sprint(int(tier)))
	raw, _ := json.Marshal(meta)
	out.Meta = raw
	return &out
}

// hidden is the script that removes from a program's bindings the tools
// ctx's identity may not use, or "" when it may use them all.
func (e *Engine) hidden(ctx context.Context, br bridging) string {
	if e.opts.Policy == nil || br.table == nil {
		return ""
	}
	var denied map[string][]string
	for _, b := range br.backends {
		for _, t := range b.Tools {
			if !e.opts.Policy.Allows(ctx, policy.Tool{Backend: b.Name, Name: t.Name, Annotations: t.Annotations}) {
				if denied == nil {
					denied = map[string][]string{}
				}
				denied[b.Name] = append(denied[b.Name], t.Name)
			}
		}
	}
	if denied == nil {
		return ""
	}
	return br.table.Hide(denied)
}
