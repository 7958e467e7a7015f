package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/scrub"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// A 2026-07-28 client calling a backend tool by name (direct or hybrid
// exposure) talks to the backend through kiln as if directly: its declared
// capabilities and log level go with the call, and when the backend (also
// on 2026-07-28) answers with an input-required result, that result goes
// back as sent — the backend's keys, its requestState, all its questions
// in one round — and the client's retry goes to the backend with its
// answers and that state. The backend, not kiln, owns the rounds and
// checks its state. A backend on an older revision asks through kiln's own
// exchange (mrtr.go) as before.

// newRound is the round a 2026-07-28 request carries, or nil for an older
// client.
func newRound(ctx context.Context, req mcp.CallToolRequest) *backend.Round {
	return roundOf(ctx, req.Params.MultiRoundTripParams)
}

func roundOf(ctx context.Context, p mcp.MultiRoundTripParams) *backend.Round {
	info := server.RequestProtocolInfoFromContext(ctx)
	if info == nil || !info.Modern {
		return nil
	}
	r := &backend.Round{Capabilities: info.ClientCapabilities, LogLevel: string(info.LogLevel), RequestState: p.RequestState}
	if len(p.InputResponses) > 0 {
		r.InputResponses, _ = json.Marshal(p.InputResponses)
	}
	return r
}

func withRound(ctx context.Context, r *backend.Round) context.Context {
	return backend.WithRound(ctx, r)
}

// errBackendRPC is a backend's JSON-RPC error answer to a passed-through
// round. mcp-go v1.2.1 answers every tool handler error with -32603; over
// HTTP relay.go answers with the backend's own error instead, over stdio
// the backend's code (e.g. -32021, missing client capability) is in the
// message.
var errBackendRPC = errors.New("the backend refused the call")

// roundResult is the client's answer for a passed-through round: the
// backend's input-required result or JSON-RPC error as sent, else out.
func roundResult(ctx context.Context, sc *scrub.Scrubber, r *backend.Round, out *toolcall.Result) (*mcp.CallToolResult, error) {
	switch {
	case r.Err != nil:
		e := scrubRPCError(sc, r.Err)
		relayError(ctx, e)
		return nil, fmt.Errorf("%w with JSON-RPC error %d: %s", errBackendRPC, e.Code, e.Message)
	case r.InputRequired != nil:
		raw := scrubRound(sc, r.InputRequired)
		res, err := mcp.ParseCallToolResult(&raw)
		if err != nil {
			return mcp.NewToolResultError("the backend's input-required result is malformed: " + err.Error()), nil
		}
		return res, nil
	}
	return toMCP(out)
}

// scrubRound redacts secrets from a backend's input-required result as
// from any other result (its questions are text a person reads), all but
// its requestState, which the backend must get back as it sent it.
func scrubRound(sc *scrub.Scrubber, raw json.RawMessage) json.RawMessage {
	return sc.JSONExcept(raw, "requestState")
}

// scrubRPCError is a backend's JSON-RPC error with its message and data
// scrubbed, for relaying to the client.
func scrubRPCError(sc *scrub.Scrubber, e *mcp.JSONRPCErrorDetails) *mcp.JSONRPCErrorDetails {
	out := *e
	out.Message = sc.String(e.Message)
	if e.Data != nil {
		if raw, err := json.Marshal(e.Data); err == nil {
			out.Data = json.RawMessage(sc.JSON(raw))
		}
	}
	return &out
}
