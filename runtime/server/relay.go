package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A backend's JSON-RPC error answer to a passed-through round (round.go),
// prompts/get, resources/read or completion/complete belongs to the client
// as sent: -32021 "missing required client capability" with its data,
// which a 2026-07-28 client acts on and whose HTTP status is 400; -32602
// for a prompt's bad arguments; -32002 for a missing resource with its
// URI. mcp-go v1.2.1 answers every handler error with -32603, so kiln puts
// a slot in the request's context, the handler fills it, and the response
// is the backend's error instead of the SDK's: over streamable HTTP the
// response writer swaps it, over stdio the read loop, which serves these
// requests itself (loopServes). The legacy SSE transport answers on its
// event stream, out of reach: there the client still gets -32603 with the
// backend's message in the text.

type relayKey struct{}

// relayed is one HTTP request's slot for a backend error to relay.
type relayed struct {
	mu  sync.Mutex
	err *mcp.JSONRPCErrorDetails
}

func (r *relayed) set(e *mcp.JSONRPCErrorDetails) {
	r.mu.Lock()
	r.err = e
	r.mu.Unlock()
}

func (r *relayed) get() *mcp.JSONRPCErrorDetails {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// relayError hands a backend's JSON-RPC error to the layer that writes the
// response: the HTTP response writer, or the stdio read loop.
func relayError(ctx context.Context, e *mcp.JSONRPCErrorDetails) {
	if r, _ := ctx.Value(relayKey{}).(*relayed); r != nil {
		r.set(e)
	} else if ea := earlyAnswerFrom(ctx); ea != nil {
		ea.relay.set(e)
	}
}

// relaying wraps w for a POST whose request may pass a backend's error
// through: a 2026-07-28 tools/call (its rounds), and prompts/get,
// resources/read and completion/complete of any era (a backend's own
// error for a prompt, resource or completion); other requests go on
// untouched.
func relaying(w http.ResponseWriter, r *http.Request, body []byte) (http.ResponseWriter, *http.Request) {
	modern := r.Header.Get("MCP-Protocol-Version") >= "2026-07-28"
	passed := bytes.Contains(body, []byte(`"prompts/get"`)) || bytes.Contains(body, []byte(`"resources/read"`)) ||
		bytes.Contains(body, []byte(`"completion/complete"`))
	// Only 2026-07-28 tools/call requests pass rounds through; older ones
	// skip the decode, which every call would pay.
	if !passed && !(modern && bytes.Contains(body, []byte(`"tools/call"`))) {
		return w, r
	}
	id := requestID(body)
	if len(id) == 0 {
		return w, r
	}
	slot := &relayed{}
	return &relayWriter{ResponseWriter: w, slot: slot, id: id, modern: modern}, r.WithContext(context.WithValue(r.Context(), relayKey{}, slot))
}

// requestID is body's top-level id as the decoder reads it, nil for none:
// found by scanRequest's one pass where it can (decoding the body for it
// was 2% of kiln's CPU per call over HTTP, make bench-hop's profile), else
// by the decoder, which settles the odd cases (a name in another case or
// given twice, escaped names).
func requestID(body []byte) json.RawMessage {
	var top topMembers
	if scanRequest(body, &top) && !top.odd {
		return top.id
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return nil
	}
	return msg.ID
}

// relayedResponse is the JSON-RPC response carrying a backend's error e
// for the request id.
func relayedResponse(id json.RawMessage, e *mcp.JSONRPCErrorDetails) []byte {
	body, _ := json.Marshal(struct {
		JSONRPC string                   `json:"jsonrpc"`
		ID      json.RawMessage          `json:"id"`
		Error   *mcp.JSONRPCErrorDetails `json:"error"`
	}{mcp.JSONRPC_VERSION, id, e})
	return body
}

// relayWriter replaces the SDK's error response with the relayed one.
type relayWriter struct {
	http.ResponseWriter
	slot    *relayed
	id      json.RawMessage
	modern  bool // 2026-07-28: the error's code sets the HTTP status
	wrote   bool
	swallow bool
}

func (w *relayWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	e := w.slot.get()
	if e == nil {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.swallow = true
	body := relayedResponse(w.id, e)
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	if w.modern {
		status = relayStatus(e.Code)
	}
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(append(body, '\n'))
}

func (w *relayWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps streamed (SSE) responses streaming.
func (w *relayWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.swallow {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *relayWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// relayStatus is the HTTP status 2026-07-28 gives a JSON-RPC error code.
func relayStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
