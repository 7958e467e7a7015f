package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// callIDs numbers the tools/call requests sent past the SDK client; the
// "kiln-call-" prefix keeps them apart from the client's integer ids on
// the same transport.
var callIDs atomic.Int64

// rawPath reports whether a call may skip the SDK client: a stdio session
// before protocol 2026-07-28, where a result is never an input-required
// round (the SDK client's loop for those is all it adds besides decoding
// the result into types kiln does not use).
func (c *Conn) rawPath() bool {
	return c.pipe != nil && c.protocol < statelessProtocol && c.client != nil
}

// callRaw writes tools/call to the backend's stdin itself and decodes the
// result once, into kiln's type. Through the SDK client the result was
// decoded three times (the response, the SDK's CallToolResult, kiln's copy
// of the raw bytes) and the request encoded twice; through the SDK's
// transport, once each plus a decode of the whole line to route it
// (stdiopipe.go).
func (c *Conn) callRaw(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*toolcall.Result, error) {
	var meta map[string]any
	if opts.ProgressToken != nil {
		meta = map[string]any{"progressToken": opts.ProgressToken}
	}
	for k, v := range propagation(ctx) {
		if meta == nil {
			meta = map[string]any{}
		}
		meta[k] = v
	}
	id := "kiln-call-" + strconv.FormatInt(callIDs.Add(1), 10)
	line, err := appendCallRequest(make([]byte, 0, 128+len(tool)+len(args)), id, tool, args, meta)
	if err != nil {
		return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
	}
	resp, err := c.pipe.call(ctx, `"`+id+`"`, line)
	if err != nil {
		if ctx.Err() != nil {
			c.cancelCall(ctx, mcp.NewRequestId(id))
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
		}
		if exit := c.gone(err); exit != nil {
			return nil, c.wrap(fmt.Sprintf("call %q", tool), fmt.Errorf("%w: %v", ErrGone, exit))
		}
		return nil, c.wrap(fmt.Sprintf("call %q", tool), transport.NewError(err))
	}
	return c.decodeRaw(tool, resp)
}

// decodeRaw reads a response line the pipe matched to a call: the
// JSON-RPC error, mapped as the SDK maps it, or the result.
func (c *Conn) decodeRaw(tool string, r rawResponse) (*toolcall.Result, error) {
	if e := r.line[r.error[0]:r.error[1]]; len(e) > 0 && string(e) != "null" {
		var rpcErr mcp.JSONRPCErrorDetails
		if err := json.Unmarshal(e, &rpcErr); err != nil {
			return nil, fmt.Errorf("backend %q: call %q: malformed error response: %w", c.name, tool, err)
		}
		return nil, c.wrap(fmt.Sprintf("call %q", tool), rpcErr.AsError())
	}
	out := &toolcall.Result{}
	if raw := r.line[r.result[0]:r.result[1]]; !scanResult(raw, out) {
		*out = toolcall.Result{}
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("backend %q: call %q: malformed result: %w", c.name, tool, err)
		}
	}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// scanResult reads a result object into out as json.Unmarshal would, from
// jsontext's scan instead of reflection: content's blocks, structuredContent
// and _meta are views into raw (the response line is the call's own), not
// copies. It reports false, leaving the decoder to read raw (and to word
// its error), for anything it does not read the same way: text that is not
// a valid object, a member name with an escape or in other letter cases
// (the decoder folds case), content that is not an array, isError that is
// not a boolean.
func scanResult(raw []byte, out *toolcall.Result) bool {
	if !jsontext.Valid(raw) {
		return false
	}
	s := jsontext.StringView(raw)
	i := jsontext.SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	// Members reads an object that starts at s[0].
	for k, v := range jsontext.Members(s[i:]) {
		switch k {
		case `"content"`:
			switch v[0] {
			case 'n':
				out.Content = nil
			case '[':
				if out.Content = out.Content[:0]; out.Content == nil {
					out.Content = make([]json.RawMessage, 0, 2)
				}
				for e := range jsontext.Elements(v) {
					out.Content = append(out.Content, jsontext.BytesView(e))
				}
			default:
				return false
			}
		case `"structuredContent"`:
			out.StructuredContent = jsontext.BytesView(v)
		case `"isError"`:
			switch v {
			case "true":
				out.IsError = true
			case "false":
				out.IsError = false
			case "null":
			default:
				return false
			}
		case `"_meta"`:
			out.Meta = jsontext.BytesView(v)
		default:
			if strings.IndexByte(k, '\\') >= 0 {
				return false
			}
			for _, n := range []string{"content", "structuredContent", "isError", "_meta"} {
				if strings.EqualFold(k[1:len(k)-1], n) {
					return false
				}
			}
		}
	}
	return true
}

// appendCallRequest appends a tools/call request line to dst. The
// arguments travel as the bytes kiln validated, compacted only when they
// span lines (a line is a message on stdio); checking them is the part of
// json.Marshal worth keeping (jsontext.Valid, a fraction of a µs for a
// small object).
func appendCallRequest(dst []byte, id, tool string, args json.RawMessage, meta map[string]any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","method":"tools/call","params":{"name":`...)
	dst = jsontext.AppendString(dst, tool, jsontext.ValidUTF8)
	dst = append(dst, `,"arguments":`...)
	dst, ok := jsontext.AppendLine(dst, args)
	if !ok {
		return nil, errors.New("arguments are not valid JSON")
	}
	if meta != nil {
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("encode _meta: %w", err)
		}
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, raw...)
	}
	return append(dst, "}}\n"...), nil
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
