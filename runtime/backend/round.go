package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Round is one request of a 2026-07-28 client's multi-round-trip call
// (SEP-2322) passed through to a backend that speaks 2026-07-28 too: the
// client's declared capabilities and log level go to the backend with the
// call, and the backend's input-required result (its inputRequests under
// its own keys, its requestState) goes back to the client as sent, so the
// rounds are the backend's, not kiln's. Without it kiln's own client would
// answer the backend's questions one at a time under its own keys and
// capabilities.
type Round struct {
	// Capabilities are the calling client's capabilities for this request.
	Capabilities *mcp.ClientCapabilities
	// LogLevel is the level the client asked for; empty asks for no logs.
	LogLevel string
	// InputResponses and RequestState are the client's answers to the
	// backend's previous round, as the client sent them.
	InputResponses json.RawMessage
	RequestState   string

	// InputRequired is set by the call when the backend answered with an
	// input-required result: the result as sent.
	InputRequired json.RawMessage
	// Err is set by the call when the backend answered with a JSON-RPC
	// error, whose code (-32021 for a missing client capability) and data
	// the client should see.
	Err *mcp.JSONRPCErrorDetails

	used atomic.Bool
}

type roundKey struct{}

// WithRound returns a context whose next tool call or prompts/get on a
// 2026-07-28 backend session is r's round; the call after it is an
// ordinary one. Only a request a client made by name (a tool in direct
// exposure, a prompt) carries a round: a program's calls are kiln's own.
func WithRound(ctx context.Context, r *Round) context.Context {
	return context.WithValue(ctx, roundKey{}, r)
}

func takeRound(ctx context.Context) *Round {
	r, _ := ctx.Value(roundKey{}).(*Round)
	if r == nil || !r.used.CompareAndSwap(false, true) {
		return nil
	}
	return r
}

var roundIDs atomic.Int64

// callRound sends one tools/call round as r describes it, bypassing the
// SDK's own multi-round-trip loop (which would answer the backend's
// questions itself), and returns the tool's result; an input-required
// answer or a JSON-RPC error is left in r.
func (c *Conn) callRound(ctx context.Context, tool string, args json.RawMessage, opts CallOptions, r *Round) (*toolcall.Result, error) {
	op := fmt.Sprintf("call %q", tool)
	res, err := c.sendRound(ctx, mcp.MethodToolsCall, op, map[string]any{"name": tool, "arguments": args}, opts.ProgressToken, r)
	if err != nil || r.InputRequired != nil {
		return &toolcall.Result{Content: []json.RawMessage{}}, err
	}
	out := &toolcall.Result{}
	if err := json.Unmarshal(res, out); err != nil {
		return nil, fmt.Errorf("backend %q: %s: malformed result: %w", c.name, op, err)
	}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// sendRound sends one request of a passed-through round and returns its
// result as sent; an input-required result is also left in r.InputRequired,
// a JSON-RPC error in r.Err.
func (c *Conn) sendRound(ctx context.Context, method mcp.MCPMethod, op string, params map[string]any, progress any, r *Round) (json.RawMessage, error) {
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion: c.protocol,
		mcp.MetaKeyClientInfo:      mcp.Implementation{Name: "kiln"},
	}
	caps := mcp.ClientCapabilities{}
	if r.Capabilities != nil {
		caps = *r.Capabilities
	}
	meta[mcp.MetaKeyClientCapabilities] = caps
	if r.LogLevel != "" && c.caps.Logging != nil {
		meta[mcp.MetaKeyLogLevel] = r.LogLevel
	}
	if progress != nil {
		meta["progressToken"] = progress
	}
	for k, v := range propagation(ctx) {
		meta[k] = v
	}
	params["_meta"] = meta
	if len(r.InputResponses) > 0 && string(r.InputResponses) != "null" {
		params["inputResponses"] = r.InputResponses
	}
	if r.RequestState != "" {
		params["requestState"] = r.RequestState
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %s: encode request: %w", c.name, op, err)
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("kiln-round-" + strconv.FormatInt(roundIDs.Add(1), 10)),
		Method:  string(method),
		Params:  json.RawMessage(raw),
	}
	if h := mcp.StandardHeaders(c.protocol, method, raw); len(h) > 0 {
		req.Header = http.Header{}
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	t := c.client.GetTransport()
	resp, err := t.SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			cancelRemote(ctx, t, req)
			return nil, fmt.Errorf("backend %q: %s: %w", c.name, op, ctx.Err())
		}
		if exit := c.gone(err); exit != nil {
			return nil, c.wrap(op, fmt.Errorf("%w: %v", ErrGone, exit))
		}
		return nil, c.wrap(op, err)
	}
	if resp.Error != nil {
		r.Err = resp.Error
		return nil, c.wrap(op, resp.Error.AsError())
	}
	var kind struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(resp.Result, &kind)
	if kind.ResultType == string(mcp.ResultTypeInputRequired) {
		r.InputRequired = append(json.RawMessage(nil), resp.Result...)
	}
	return resp.Result, nil
}
