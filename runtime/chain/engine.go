package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Sandbox runs tier-3 programs; *sandbox.Sandbox is one.
type Sandbox interface {
	Run(ctx context.Context, code string, opts sandbox.RunOptions) (*sandbox.Outcome, error)
}

// Resolver maps `obj.tool` as written in code to a backend and tool;
// *bridge.Table is one.
type Resolver interface {
	Resolve(objIdent, toolIdent string) (backend, tool string, ok bool)
}

// simple tries tier 2: one call or one introspection read it can prove it
// understands. ok is false when the code must go to the sandbox, which is
// also where names that do not resolve go, so the model gets the sandbox's
// hints (closest backend, meta-tool misuse) instead of a bare "not found".
func (e *Engine) simple(ctx context.Context, code string) (*toolcall.Result, bool) {
	if e.opts.Resolver == nil {
		return nil, false
	}
	if call, ok := ParseSimpleCall(code); ok {
		backend, tool, ok := e.opts.Resolver.Resolve(call.Object, call.Tool)
		if !ok {
			return nil, false
		}
		res, err := e.opts.Caller.CallTool(ctx, backend, tool, call.Args)
		if err != nil {
			return errorResult(err), true
		}
		return res, true
	}
	if in, ok := ParseIntrospection(code); ok {
		v, found := e.introspect(in)
		if !found {
			return nil, false // let the engine produce JS's own answer or error
		}
		raw, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return nil, false
		}
		return toolcall.Text(string(raw)), true
	}
	return nil, false
}

// introspect answers __interfaces… and __getToolInterface(name) from the
// registry, with the same shape the preamble's table has.
func (e *Engine) introspect(in Introspection) (any, bool) {
	iface := func(backend, tool string) any {
		t, err := e.opts.Registry.Resolve(backend + "." + tool)
		if err != nil {
			return nil
		}
		return map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema}
	}
	if in.Func {
		t, err := e.opts.Registry.Resolve(in.Name)
		if err != nil {
			return nil, true // __getToolInterface returns null for unknown names
		}
		return iface(t.Backend, t.Name), true
	}
	// Walk the path over the registry: backends, then tools, then fields.
	var cur any
	switch len(in.Path) {
	case 0:
		all := map[string]any{}
		for _, b := range e.opts.Registry.BackendNames() {
			all[b] = e.backendInterfaces(b)
		}
		cur = all
	default:
		if _, ok := e.opts.Registry.Backend(in.Path[0]); !ok {
			return nil, false
		}
		cur = e.backendInterfaces(in.Path[0])
		for _, p := range in.Path[1:] {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[p]; !ok {
				return nil, false
			}
		}
	}
	if in.Keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys, true
	}
	return cur, true
}

func (e *Engine) backendInterfaces(backend string) map[string]any {
	out := map[string]any{}
	for _, t := range e.opts.Registry.Tools() {
		if t.Backend == backend {
			out[t.Name] = map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema}
		}
	}
	return out
}

// program runs tier 3 and renders the outcome: the returned value as JSON
// text, console output after it, and failures as isError with the script's
// message, stack and hint.
func (e *Engine) program(ctx context.Context, code string, timeout time.Duration) *toolcall.Result {
	if e.opts.Sandbox == nil {
		return toolcall.Errorf("call_tool_chain: TypeScript is not available in this build; send a JSON call {\"tool\": \"backend.tool\", \"arguments\": {…}}")
	}
	out, err := e.opts.Sandbox.Run(ctx, code, sandbox.RunOptions{Timeout: timeout})
	if err != nil {
		if errors.Is(err, sandbox.ErrBusy) {
			return toolcall.Errorf("call_tool_chain: the sandbox is busy with other runs; retry in a moment, or send a single call as JSON, which does not need the sandbox")
		}
		return toolcall.Errorf("call_tool_chain: %v", err)
	}
	var b strings.Builder
	if out.IsError {
		b.WriteString(out.Error)
	} else {
		var v any
		if json.Unmarshal(out.Value, &v) == nil {
			if s, ok := v.(string); ok {
				b.WriteString(s) // a returned string is shown as text, not JSON-quoted
			} else {
				pretty, _ := json.MarshalIndent(v, "", " ")
				b.Write(pretty)
			}
		} else {
			b.Write(out.Value)
		}
	}
	if len(out.Logs) > 0 {
		fmt.Fprintf(&b, "\n\n[console output]\n%s", strings.Join(out.Logs, "\n"))
	}
	r := toolcall.Text(b.String())
	r.IsError = out.IsError
	return r
}
