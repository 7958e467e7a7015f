package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Sandbox runs tier-3 programs; *sandbox.Pool (worker processes, what
// kiln serve uses) and *sandbox.Sandbox (in-process) are two.
type Sandbox interface {
	Run(ctx context.Context, code string, opts sandbox.RunOptions) (*sandbox.Outcome, error)
}

// Resolver maps `obj.tool` as written in code to a backend and tool;
// *bridge.Table is one.
type Resolver interface {
	Resolve(objIdent, toolIdent string) (backend, tool string, ok bool)
}

// literal tries tier 2, the literal call: one call or one introspection read it can prove it
// understands. ok is false when the code must go to the sandbox, which is
// also where names that do not resolve go, so the model gets the sandbox's
// hints (closest backend, meta-tool misuse) instead of a bare "not found".
func (e *Engine) literal(ctx context.Context, code string, br bridging) (*toolcall.Result, bool) {
	if br.resolver == nil {
		return nil, false
	}
	if call, ok := ParseLiteralCall(code); ok {
		backend, tool, ok := br.resolver.Resolve(call.Object, call.Tool)
		if !ok {
			return nil, false
		}
		ctx, end := e.enter(ctx, TierLiteral)
		defer end()
		res, err := e.opts.Caller.CallTool(ctx, backend, tool, call.Args)
		if err != nil {
			return errorResult(err), true
		}
		return res, true
	}
	if in, ok := ParseIntrospection(code); ok {
		raw, ok := in.Answer(br.backends)
		if !ok {
			return nil, false // it depends on JS semantics: let the engine answer
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, raw, "", " ") != nil {
			return nil, false
		}
		return toolcall.Text(pretty.String()), true
	}
	return nil, false
}

// program runs tier 3 and renders the outcome: the returned value as JSON
// text, console output after it, and failures as isError with the script's
// message, stack and hint.
func (e *Engine) program(ctx context.Context, code string, timeout time.Duration, br bridging) *toolcall.Result {
	if e.opts.Sandbox == nil {
		return toolcall.Errorf("call_tool_chain: TypeScript is not available in this build; send a JSON call {\"tool\": \"backend.tool\", \"arguments\": {…}}")
	}
	extra := br.extraPreamble
	if hide := e.hidden(ctx, br); hide != "" {
		extra += "\n" + hide
	}
	out, err := e.opts.Sandbox.Run(ctx, code, sandbox.RunOptions{Timeout: timeout, ExtraPreamble: extra, ExtraBindings: br.extraBindings})
	if err != nil {
		if errors.Is(err, sandbox.ErrBusy) {
			return toolcall.Errorf("call_tool_chain: the sandbox is busy with other runs; retry in a moment, or send a single call as JSON, which does not need the sandbox")
		}
		return toolcall.Errorf("call_tool_chain: %v", err)
	}
	var b strings.Builder
	if out.IsError {
		b.WriteString(out.Error)
		b.WriteString(e.heldBack(out.Error))
	} else {
		// A returned string is shown as text, not JSON-quoted. Anything else
		// is indented as the sandbox encoded it: decoding it into Go values
		// would sort object keys and escape <, > and &.
		var str string
		var pretty bytes.Buffer
		switch {
		case len(out.Value) > 0 && out.Value[0] == '"' && json.Unmarshal(out.Value, &str) == nil:
			b.WriteString(str)
		case json.Indent(&pretty, out.Value, "", " ") == nil:
			b.Write(pretty.Bytes())
		default:
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

// noToolRE finds the sandbox's hint for a call of a tool its backend
// object lacks.
var noToolRE = regexp.MustCompile(`hint: backend (\S+) has no tool (\S+?);`)

// heldBack explains a program's call of a tool held back under drift: pin,
// which the bridge does not bind: the sandbox only knows the tool is
// missing, the registry knows why.
func (e *Engine) heldBack(msg string) string {
	m := noToolRE.FindStringSubmatch(msg)
	if m == nil || e.opts.Registry == nil {
		return ""
	}
	if _, err := e.opts.Registry.Resolve(m[1] + "." + m[2]); errors.Is(err, registry.ErrHeldBack) {
		return "\n" + err.Error()
	}
	return ""
}
