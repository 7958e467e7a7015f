package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// rawAnswer lets fastCall write a tools/call response from kiln's own
// result instead of the SDK's: converting it (toMCP decodes _meta) and
// encoding it with mcp-go's CallToolResult.MarshalJSON (a map per result,
// every raw block validated and compacted by encoding/json) cost ~20 µs of
// a tier-1 call (BenchmarkEchoHop profile). fastCall puts one in the
// context; the outermost handler claims it and leaves its result there.
type rawAnswer struct {
	claimed atomic.Bool
	result  *toolcall.Result
	// sdk is the stand-in the handler returned: fastCall writes result
	// only when the handler's answer is this one (an input-required round,
	// a refusal or a panic answer went another way).
	sdk *mcp.CallToolResult
}

type rawAnswerKey struct{}

// claimRawAnswer returns the context's rawAnswer if no handler has taken
// it yet: a handler run inside another (nothing does so today) answers
// through the SDK's type as before.
func claimRawAnswer(ctx context.Context) *rawAnswer {
	a, _ := ctx.Value(rawAnswerKey{}).(*rawAnswer)
	if a == nil || !a.claimed.CompareAndSwap(false, true) {
		return nil
	}
	return a
}

// answer converts a handler's result for the SDK, or, when the request
// came through fastCall, keeps it for fastCall to encode: the stand-in
// carries only isError, which hooks and telemetry read.
func answer(a *rawAnswer, r *toolcall.Result) (*mcp.CallToolResult, error) {
	if a == nil {
		return toMCP(r)
	}
	a.result, a.sdk = r, &mcp.CallToolResult{IsError: r.IsError}
	return a.sdk, nil
}

// appendCallResponse writes the JSON-RPC response for r as mcp-go would
// (same members, same values; raw blocks as kiln holds them, so < and >
// are not escaped), decorated for a 2026-07-28 request with serverInfo.
// ok is false for anything it does not write the same way: an id that is
// not a plain string or small integer (mcp-go re-encodes it), a _meta that
// is not an object or already names a serverInfo, a raw part that is not
// valid JSON.
func appendCallResponse(dst []byte, id json.RawMessage, r *toolcall.Result, modern bool, serverInfo []byte) ([]byte, bool) {
	if !plainID(id) {
		return nil, false
	}
	if dst == nil {
		dst = make([]byte, 0, responseSize(id, r, serverInfo))
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":{`...)
	meta := bytes.TrimSpace(r.Meta)
	hasMeta := len(meta) > 0 && string(meta) != "null"
	if hasMeta && (meta[0] != '{' || !jsontext.Valid(meta)) {
		return nil, false
	}
	var ok bool
	switch {
	case modern:
		if hasMeta && bytes.Contains(meta, []byte(`"io.modelcontextprotocol/serverInfo"`)) {
			return nil, false
		}
		dst = append(dst, `"_meta":{"io.modelcontextprotocol/serverInfo":`...)
		dst = append(dst, serverInfo...)
		if hasMeta {
			// Compacted whole (the tail alone is not JSON), then its
			// members spliced after serverInfo's: the object's { becomes
			// a comma, or goes with the space after it when it has none
			// ("{ }" left a comma before the closing brace).
			at := len(dst)
			dst, _ = jsontext.AppendLine(dst, meta) // checked above
			if rest := bytes.TrimLeft(dst[at+1:], " \t\r\n"); rest[0] != '}' {
				dst[at] = ','
			} else {
				dst = append(dst[:at], '}')
			}
		} else {
			dst = append(dst, '}')
		}
		dst = append(dst, ',')
	case hasMeta:
		dst = append(dst, `"_meta":`...)
		dst, _ = jsontext.AppendLine(dst, meta) // checked above
		dst = append(dst, ',')
	}
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, ok = jsontext.AppendLine(dst, c); !ok {
			return nil, false
		}
	}
	dst = append(dst, ']')
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if modern {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	if sc := bytes.TrimSpace(r.StructuredContent); len(sc) > 0 && string(sc) != "null" {
		dst = append(dst, `,"structuredContent":`...)
		if dst, ok = jsontext.AppendLine(dst, sc); !ok {
			return nil, false
		}
	}
	return append(dst, '}', '}'), true
}

// responseSize is what appendCallResponse writes for r, give or take the
// compaction of multi-line parts: one allocation for the whole answer.
func responseSize(id json.RawMessage, r *toolcall.Result, serverInfo []byte) int {
	n := 128 + len(id) + len(r.Meta) + len(serverInfo) + len(r.StructuredContent)
	for _, c := range r.Content {
		n += len(c) + 1
	}
	return n
}

// plainID reports whether id is written back as it came by mcp-go too: a
// string without escapes, or an integer a float64 holds exactly.
func plainID(id json.RawMessage) bool {
	s := string(id)
	switch {
	case len(s) >= 2 && s[0] == '"':
		return s[len(s)-1] == '"' && !strings.ContainsAny(s[1:len(s)-1], `\"`)
	case len(s) == 0 || len(s) > 15 || s == "-0":
		return false
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// callLine is what fastCall reads of a tools/call line.
type callLine struct {
	jsonrpc   string
	result    bool // a result member is present (a response, not a request)
	params    bool // params is an object
	name      string
	arguments json.RawMessage
	meta      json.RawMessage
	task      bool // a task member that is not null
	round     mcp.MultiRoundTripParams
}

// scanCallLine reads line with jsontext's scanner, decoding only the tool
// name; ok is false when it cannot read it as encoding/json would (escaped
// or case-folded member names, a repeated params, the round-trip members),
// and the caller decodes it instead.
//
// m's name, arguments and _meta are views into line, not copies (a
// program's whole text was copied twice, line to string to RawMessage):
// line must not change while m is in use, as the read loop's lines do not
// (each is ReadBytes' own).
func scanCallLine(line []byte, m *callLine) (ok bool) {
	if !jsontext.Valid(line) {
		return false
	}
	text := jsontext.StringView(line)
	if text = strings.TrimSpace(text); text == "" || text[0] != '{' {
		return false
	}
	var params string
	ok = true
	for k, v := range jsontext.Members(text) {
		switch k {
		case `"jsonrpc"`:
			if v[0] != '"' || strings.IndexByte(v, '\\') >= 0 {
				ok = false
			}
			m.jsonrpc = jsontext.DecodeString(v)
		case `"result"`:
			m.result = true
		case `"params"`:
			if params != "" {
				ok = false // encoding/json merges repeated objects
			}
			params = v
		case `"id"`, `"method"`:
		default:
			ok = ok && plainName(k, "jsonrpc", "result", "params", "id", "method")
		}
	}
	if !ok || params == "" || params[0] != '{' {
		return ok
	}
	m.params = true
	for k, v := range jsontext.Members(params) {
		switch k {
		case `"name"`:
			if v[0] != '"' {
				return false // the decoder's type error decides
			}
			m.name = jsontext.DecodeString(v)
		case `"arguments"`:
			m.arguments = jsontext.BytesView(v)
		case `"_meta"`:
			m.meta = jsontext.BytesView(v)
		case `"task"`:
			m.task = v != "null"
		case `"inputResponses"`, `"requestState"`:
			return false
		default:
			if !plainName(k, "name", "arguments", "_meta", "task", "inputResponses", "requestState") {
				return false
			}
		}
	}
	return true
}

// plainName reports whether the quoted member name key is none of names,
// even to encoding/json, which matches names without regard to case.
func plainName(key string, names ...string) bool {
	if strings.IndexByte(key, '\\') >= 0 {
		return false
	}
	for _, n := range names {
		if strings.EqualFold(key[1:len(key)-1], n) {
			return false
		}
	}
	return true
}

// decodeCallLine is scanCallLine by encoding/json; ok is false when line
// does not decode.
func decodeCallLine(line []byte, m *callLine) bool {
	var d struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Params  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      json.RawMessage `json:"_meta"`
			Task      *mcp.TaskParams `json:"task"`
			mcp.MultiRoundTripParams
		} `json:"params"`
	}
	if json.Unmarshal(line, &d) != nil {
		return false
	}
	*m = callLine{jsonrpc: d.JSONRPC, result: d.Result != nil}
	if p := d.Params; p != nil {
		m.params, m.name, m.arguments, m.meta, m.task, m.round = true, p.Name, p.Arguments, p.Meta, p.Task != nil, p.MultiRoundTripParams
	}
	return true
}
