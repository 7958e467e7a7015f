package chain

import (
	"context"
	"encoding/json"

	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Call runs one backend tool that a client called by its exposed name
// (gateway.expose direct or hybrid). It takes tier 1's path (argument
// validation and dispatch, then scrubbing and the output pipeline) but no
// call_tool_chain envelope: no kiln/tier tag, and no timeout besides the
// backend's own, since no call_tool_chain timeout was asked for. Content
// kinds, structuredContent and isError come back as the backend sent them.
func (e *Engine) Call(ctx context.Context, backend, tool string, args json.RawMessage) *toolcall.Result {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	res, err := e.opts.Caller.CallTool(ctx, backend, tool, args)
	if err != nil {
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
