package chain

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Call runs one backend tool that a client called by its exposed name
// (gateway.expose direct or hybrid). It takes tier 1's path (argument
// validation and dispatch, then scrubbing and the output pipeline) but no
// call_tool_chain envelope: no kiln/tier tag, and no timeout besides the
// backend's own, since no call_tool_chain timeout was asked for. Content
// kinds, structuredContent and isError come back as the backend sent them.
// name is what the client called, for error texts.
func (e *Engine) Call(ctx context.Context, name, backend, tool string, args json.RawMessage) *toolcall.Result {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	res, err := e.opts.Caller.CallTool(ctx, backend, tool, args)
	var de *dispatch.Error
	switch {
	case err == nil:
	case errors.As(err, &de) && de.Code == dispatch.CodeInvalidArgs && de.Err != nil:
		// The dispatcher's text names backend.tool and tool_info, which a
		// client of directly listed tools may not have.
		res = toolcall.Errorf("%s: invalid arguments: %v%s", name, de.Err, e.expected(backend, tool))
	default:
		res = errorResult(err)
	}
	if e.opts.Scrub != nil {
		res = e.opts.Scrub(res)
	}
	res, st := pipeline.Result(res, e.opts.Output)
	if e.opts.Counter != nil {
		e.opts.Counter.Add(st)
	}
	return res
}

// expected describes the tool's arguments for an error text, or "".
func (e *Engine) expected(backend, tool string) string {
	if e.opts.Registry == nil {
		return ""
	}
	t, err := e.opts.Registry.Resolve(backend + "." + tool)
	if err != nil {
		return ""
	}
	return "\nExpected arguments: " + t.Signature()
}
