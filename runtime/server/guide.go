package server

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/pipeline"
)

// stateOrder is the order states are counted in: working first.
var stateOrder = []string{string(dispatch.StateHealthy), string(dispatch.StateStarting), string(dispatch.StateUnhealthy),
	string(dispatch.StateNeedsLogin), string(dispatch.StateStopped), string(dispatch.StateDisabled), stateNotConfigured}

func countStates(views []backendView) string {
	counts := map[string]int{}
	for _, v := range views {
		counts[v.State]++
	}
	states := slices.Clone(stateOrder)
	for st := range counts {
		if !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	var parts []string
	for _, st := range states {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return strings.Join(parts, ", ")
}

func (s *Server) overview() string {
	views := s.backends()
	tools := len(s.opts.Registry.Tools())
	h := s.health()
	var b strings.Builder
	fmt.Fprintf(&b, "# kiln\n\nkiln is an MCP gateway: it serves the tools of %d backend MCP servers through %d meta-tools, "+
		"so their schemas stay out of your context until you need one. Tool IDs look like backend.tool.\n\n## Now\n\n", len(views), len(metaTools))
	fmt.Fprintf(&b, "- Backends: %d", len(views))
	if len(views) > 0 {
		fmt.Fprintf(&b, " (%s)", countStates(views))
	}
	fmt.Fprintf(&b, "\n- Tools: %d\n- Health: %s. Details: %s\n", tools, h.Summary, uriHealth)
	var dynamic, drifted, pinned []string
	for _, v := range views {
		if v.Dynamic {
			dynamic = append(dynamic, v.Name)
		}
		switch {
		case v.Drift != nil && v.Drift.Served == "reviewed":
			pinned = append(pinned, v.Name)
		case v.Drift != nil:
			drifted = append(drifted, v.Name)
		}
	}
	if len(dynamic) > 0 {
		fmt.Fprintf(&b, "- Registered at run time: %s\n", strings.Join(dynamic, ", "))
	}
	if len(drifted) > 0 {
		fmt.Fprintf(&b, "- Tools changed since kiln was built (served from the live list): %s; see %s\n", strings.Join(drifted, ", "), uriBackends)
	}
	if len(pinned) > 0 {
		fmt.Fprintf(&b, "- Changed since kiln was built, held back pending review (the reviewed tools are served): %s; see %s\n", strings.Join(pinned, ", "), uriBackends)
	}
	b.WriteString(`
## Using the meta-tools

1. search_tools {"task_description": "what you want to do"}: the best matching tools, each with a call example.
   For a task of several steps add "steps": ["first step", "second step"]: the best tools for every step come first.
2. tool_info {"tool_name": "backend.tool"}: its parameters; detail "full" gives the exact input schema.
3. call_tool_chain {"code": "..."}: runs tools. code is a JSON call {"tool": "backend.tool", "arguments": {...}}
   or TypeScript (several calls, loops, Promise.all). Pass intent to keep only what you need from a large output.

- list_tools_meta pages through every tool; get_required_keys_for_tool says which environment variables a tool's backend needs.
`)
	if s.opts.Registrar != nil {
		b.WriteString("- register_manual adds a backend MCP server at run time; deregister_manual removes it.\n")
	} else {
		b.WriteString("- register_manual and deregister_manual are turned off in this kiln.\n")
	}
	fmt.Fprintf(&b, `
## Read next

- %s: how to write call_tool_chain code, its limits and errors
- %s: every tool, one line each (%s is shorter; %s adds signatures)
- %s: one tool in full
- %s and %s: backend states, errors, stderr, tools
- %s: what is down and when kiln retries
- %s: the last backend calls and their outcomes
- %s: call counts and output savings

Prompts: discover (explore a topic), find_tool (tools for a task), backend_status (health in words).
`, uriChainGuide, uriTools, uriLLMs, uriLLMsFull, uriTool, uriBackends, uriBackend, uriHealth, uriRecent, uriStats)
	return b.String()
}

// guideLimits are the limits the guide states, read from the config the
// sandbox was built from, with the sandbox's and pipeline's defaults.
type guideLimits struct {
	timeout, maxTimeout, queueWait       time.Duration
	memory                               int64
	calls, concurrent                    int
	maxOutput, intentAt, chunkAt, trimAt int
	intentOn, chunkOn, trimOn            bool
}

func (s *Server) guideLimits() guideLimits { return limitsOf(s.opts.Config) }

// limitsOf reads the limits from cfg, or from the defaults when cfg is nil.
func limitsOf(cfg *config.Config) guideLimits {
	g := config.DefaultGateway()
	if cfg != nil {
		g = cfg.Gateway
	}
	sb, out, def := g.Sandbox, g.Output, config.SandboxDefaults()
	l := guideLimits{
		timeout:    cmp.Or(sb.Timeout, def.Timeout),
		maxTimeout: cmp.Or(sb.MaxTimeout, def.MaxTimeout),
		queueWait:  cmp.Or(sb.QueueWait, def.QueueWait),
		memory:     cmp.Or(sb.MemoryBytes, def.MemoryBytes),
		calls:      cmp.Or(sb.MaxCalls, def.MaxCalls),
		concurrent: cmp.Or(sb.MaxConcurrent, def.MaxConcurrent),
		maxOutput:  cmp.Or(g.MaxOutputSize, pipeline.DefaultMaxOutputSize),
		intentAt:   cmp.Or(out.IntentThreshold, pipeline.DefaultIntentThreshold),
		chunkAt:    cmp.Or(out.ChunkThreshold, pipeline.DefaultChunkThreshold),
		trimAt:     cmp.Or(out.TruncateAt, pipeline.DefaultTruncateAt),
		intentOn:   out.IntentFilter, chunkOn: out.AutoChunkJSON, trimOn: out.SmartTruncation,
	}
	l.maxTimeout = max(l.maxTimeout, l.timeout)
	return l
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// chainGuide follows runtime/chain (the three tiers) and runtime/sandbox
// (limits, console capture, hints, the bridge's introspection globals).
func (s *Server) chainGuide() string {
	l := s.guideLimits()
	example := `const r = await backend.tool({query: "…"}); return r;`
	jsonExample := `{"tool": "backend.tool", "arguments": {"query": "…"}}`
	if tools := s.opts.Registry.Tools(); len(tools) > 0 {
		t := tools[0]
		example = "const r = await " + t.Example(s.ref) + "; return r;"
		jsonExample = fmt.Sprintf(`{"tool": %q, "arguments": {...}}`, t.ID())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# call_tool_chain\n\nRuns backend tools. `code` takes one of three forms; kiln runs each the cheapest way it can.\n\n"+
		"## 1. A JSON call\n\n    %s\n\n"+
		"Only the keys \"tool\" and \"arguments\". \"tool\" is backend.tool, or a bare tool name only one backend has; "+
		"\"arguments\" is an object of named arguments (omit it for none). No JavaScript runs.\n\n"+
		"## 2. One TypeScript call\n\n    %s\n\n"+
		"`return await backend.tool({...})` and a bare `backend.tool({...})` work too. With literal arguments this runs "+
		"without starting the JavaScript engine.\n\n", jsonExample, example)
	b.WriteString("## 3. A TypeScript program\n\n" +
		"Several calls, variables, loops, conditions and try/catch in one run. Use top-level `await` and `return` " +
		"(or export a `main` function). The returned value comes back as JSON; a returned string comes back as plain text, undefined as null.\n\n" +
		"    const [a, b] = await Promise.all([\n      backend.search({query: \"first\"}),\n      backend.search({query: \"second\"}),\n    ]);\n" +
		"    return {first: a, second: b};\n\n" +
		"- Backends are globals and their tools async functions taking one object of named arguments. Always `await` a call; " +
		"start several and `await Promise.all([...])` to run them at the same time.\n" +
		"- Names that are not JavaScript identifiers are written with `_` (`my-server.get-file` is called as `my_server.get_file`); " +
		"the original spelling works as `globalThis[\"my-server\"][\"get-file\"]`. search_tools and tool_info show the exact call.\n" +
		"- A call resolves to the tool's structuredContent, else its text parsed as JSON when it is JSON, else the text. " +
		"A tool that fails rejects with an Error whose message is the tool's error text and whose `tool` property names it; catch it with try/catch.\n" +
		"- console.log, info, warn, error and debug are captured (up to 64 KiB) and returned after the result under `[console output]`; " +
		"warn, error and debug lines start with their level.\n" +
		"- There is no require, import, fetch, filesystem, process, timers or eval: backend tools are the only way out. " +
		"The meta-tools (search_tools, tool_info, ...) cannot be called inside; call them as separate MCP tool calls.\n\n")
	fmt.Fprintf(&b, "## Limits\n\n"+
		"- Time: %s for the whole run unless you pass `timeout` (milliseconds); at most %s. It applies to all three forms.\n"+
		"- Memory: %s of heap per run.\n"+
		"- Tool calls: %d per run; batch the work (one call taking a list, if the tool has one) or split it across requests.\n"+
		"- Concurrency: %d programs at a time; a program waits up to %s for a slot, then fails as busy (a JSON call needs no slot).\n"+
		"- Code: up to 256 KiB.\n\n", l.timeout, l.maxTimeout, mib(l.memory), l.calls, l.concurrent, l.queueWait)
	fmt.Fprintf(&b, "## Output\n\nThe text returned is capped at `max_output_size` bytes (default %d), never cutting a character.", l.maxOutput)
	if l.intentOn {
		fmt.Fprintf(&b, " Pass `intent` (what you are looking for, in a few words): outputs over %d bytes keep only the sections that mention it.", l.intentAt)
	} else {
		b.WriteString(" The intent filter is turned off in this kiln, so `intent` has no effect.")
	}
	if l.chunkOn {
		fmt.Fprintf(&b, " JSON over %d bytes is replaced by a compact summary.", l.chunkAt)
	}
	if l.trimOn {
		fmt.Fprintf(&b, " Text over %d bytes loses its middle (the start and end are kept).", l.trimAt)
	}
	b.WriteString(" A footer says how much was cut. Ask for less (fewer fields, a smaller page) or filter in the script before returning.\n\n")
	fmt.Fprintf(&b, "## Errors\n\n"+
		"Failures come back as isError results: the message, the script's stack in your own line numbers, and a hint for common mistakes: "+
		"a tool called as a global instead of backend.tool, a misspelled backend or tool (with the closest names), "+
		"a variable that hides a backend's name, a meta-tool called inside the script, a host API the sandbox lacks, "+
		"and a backend that is down or starting (read %s). A timeout says so; pass a larger `timeout` or split the work.\n\n", uriHealth)
	b.WriteString("## Introspection\n\n" +
		"- `Object.keys(__interfaces)` lists the backends; `Object.keys(__interfaces[\"backend\"])` lists its tools.\n" +
		"- `__interfaces[\"backend\"][\"tool\"]` and `__getToolInterface(\"backend.tool\")` give `{name, description, input_schema}`; " +
		"__getToolInterface returns null for an unknown tool.\n" +
		"- Sent alone as the whole code (`return __getToolInterface(\"backend.tool\");`), these are answered without starting the engine.\n")
	return b.String()
}
