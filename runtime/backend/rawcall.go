package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// callIDs numbers the tools/call requests sent past the SDK client; the
// "kiln-call-" prefix keeps them apart from the client's integer ids on
// the same transport.
var callIDs atomic.Int64

// rawCallParams is tools/call's params as kiln sends them: the arguments
// travel as the bytes kiln validated.
type rawCallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// rawPath reports whether a call may skip the SDK client: a stdio session
// before protocol 2026-07-28, where a result is never an input-required
// round (the SDK client's loop for those is all it adds besides decoding
// the result into types kiln does not use).
func (c *Conn) rawPath() bool {
	return c.transport == config.TransportStdio && c.protocol < statelessProtocol && c.client != nil
}

// callRaw sends tools/call on the transport and decodes the result once,
// into kiln's type. Through the SDK client the result was decoded three
// times (the response, the SDK's CallToolResult, kiln's copy of the raw
// bytes) and the request encoded twice; on a stdio backend that was a
// tenth of a tier-1 call's CPU (BenchmarkEchoHop profile).
func (c *Conn) callRaw(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*toolcall.Result, error) {
	params := rawCallParams{Name: tool, Arguments: args}
	if opts.ProgressToken != nil {
		params.Meta = map[string]any{"progressToken": opts.ProgressToken}
	}
	for k, v := range propagation(ctx) {
		if params.Meta == nil {
			params.Meta = map[string]any{}
		}
		params.Meta[k] = v
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("kiln-call-" + strconv.FormatInt(callIDs.Add(1), 10)),
		Method:  string(mcp.MethodToolsCall),
		Params:  params,
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
	}
	resp, err := c.client.GetTransport().SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			c.cancelCall(ctx, req.ID)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
		}
		if exit := c.gone(err); exit != nil {
			return nil, c.wrap(fmt.Sprintf("call %q", tool), fmt.Errorf("%w: %v", ErrGone, exit))
		}
		return nil, c.wrap(fmt.Sprintf("call %q", tool), transport.NewError(err))
	}
	if resp.Error != nil {
		return nil, c.wrap(fmt.Sprintf("call %q", tool), resp.Error.AsError())
	}
	out := &toolcall.Result{}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return nil, fmt.Errorf("backend %q: call %q: malformed result: %w", c.name, tool, err)
	}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// cancelCall tells the backend kiln gave up on a call, as the SDK client
// does: over stdio notifications/cancelled is the only way. Best effort,
// off the caller's path.
func (c *Conn) cancelCall(ctx context.Context, id mcp.RequestId) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
	}}
	go func() {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.client.GetTransport().SendNotification(nctx, n)
	}()
}
