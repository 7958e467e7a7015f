package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// maxNesting bounds how deep arrays and objects may nest in one message.
// Real MCP messages nest a few dozen levels at most; a 100k-deep body
// costs the decoder and every later stage (schema validation, the
// sandbox) recursion for nothing.
const maxNesting = 512

// JSON-RPC error codes kiln answers with itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603
)

// envelopeError is a message refused before the SDK sees it, because the
// SDK would answer it with a misleading "not valid json" (deep nesting, a
// batch) or serve it as if nothing were wrong (an object id).
type envelopeError struct {
	code int
	id   json.RawMessage // the request's id when it is a valid one, else null
	msg  string
}

func (e *envelopeError) response() []byte {
	id := e.id
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{e.code, e.msg}})
	return b
}

// checkEnvelope refuses what the SDK mishandles and passes everything else
// (including text that is not JSON, which the SDK reports) untouched.
func checkEnvelope(msg []byte) *envelopeError {
	if plainRequest(msg) {
		return nil
	}
	return envelopeProblem(msg)
}

// plainRequest is checkEnvelope's fast path: one pass over msg that
// reports true only for an object nested at most maxNesting deep whose
// jsonrpc, id and method members are absent or of the right type, which
// is every message a working client sends. Anything else, or anything it
// is unsure of, goes to envelopeProblem, which decodes (two passes of the
// standard decoder cost about ten times as much on large arguments).
func plainRequest(b []byte) bool {
	return scanRequest(b, nil)
}

// topMembers are the top-level members scanRequest reports: raw value
// bytes, nil when absent.
type topMembers struct {
	id, method json.RawMessage
	// odd is set when a name matches id or method only case-insensitively
	// or twice: the decoder takes the last of them, so the line is left to
	// it.
	odd bool
}

func (t *topMembers) set(field *json.RawMessage, name, want string, v json.RawMessage) {
	if *field != nil || name != want {
		t.odd = true
	}
	*field = v
}

// scanRequest is plainRequest that also reports, when top is not nil, the
// raw id and method values it passed over, so the stdio read loop can
// route a line without decoding it.
func scanRequest(b []byte, top *topMembers) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	depth, deepest := 0, 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case '}', ']':
			depth--
		case '"':
			start := i
			end, escaped := skipString(b, i)
			if end < 0 {
				return false
			}
			i = end
			if depth != 1 {
				continue
			}
			// A member name of the top object: look at its value.
			j := skipSpace(b, i+1)
			if j >= len(b) || b[j] != ':' {
				continue // a string value, not a name
			}
			if escaped {
				return false // the decoder unescapes names; leave it to it
			}
			name := string(b[start+1 : i])
			j = skipSpace(b, j+1)
			if j >= len(b) {
				return false
			}
			v := b[j]
			switch {
			case strings.EqualFold(name, "id"):
				if v != '"' && v != '-' && (v < '0' || v > '9') {
					return false
				}
				if top != nil {
					top.set(&top.id, name, "id", scalarAt(b, j))
				}
			case strings.EqualFold(name, "jsonrpc"), strings.EqualFold(name, "method"):
				if v != '"' {
					return false
				}
				if top != nil && strings.EqualFold(name, "method") {
					top.set(&top.method, name, "method", scalarAt(b, j))
				}
			}
		}
	}
	return depth == 0 && deepest <= maxNesting
}

// scalarAt returns the string or number that starts at b[j], or nil when
// it does not end (scanRequest then fails on its own).
func scalarAt(b []byte, j int) json.RawMessage {
	if b[j] == '"' {
		end, _ := skipString(b, j)
		if end < 0 {
			return nil
		}
		return b[j : end+1]
	}
	k := j
	for k < len(b) && (b[k] == '-' || b[k] == '+' || b[k] == '.' || b[k] == 'e' || b[k] == 'E' || ('0' <= b[k] && b[k] <= '9')) {
		k++
	}
	return b[j:k]
}

// skipString returns the index of the quote closing the string that
// opens at b[i], and whether it holds escapes; -1 when it does not close.
// It is not jsontext.StringEnd on purpose: that one's IndexByte calls won
// on 64 KiB of arguments (57 -> 2 µs) but lost on a typical tools/call's
// short escaped strings (BenchmarkCheckEnvelope 200 -> 515 ns), and every
// stdio request passes here.
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// envelopeProblem is checkEnvelope's slow path.
func envelopeProblem(msg []byte) *envelopeError {
	trimmed := bytes.TrimSpace(msg)
	if len(trimmed) == 0 {
		return nil
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Error   json.RawMessage `json:"error"`
	}
	decoded := trimmed[0] == '{' && json.Unmarshal(trimmed, &m) == nil
	var validID json.RawMessage
	if decoded && m.ID != nil && (m.ID[0] == '"' || m.ID[0] == '-' || ('0' <= m.ID[0] && m.ID[0] <= '9')) {
		validID = m.ID
	}
	if d := jsontext.Depth(string(trimmed), maxNesting); d > maxNesting {
		e := &envelopeError{code: codeInvalidRequest, id: validID, msg: fmt.Sprintf("invalid request: JSON nesting too deep (limit %d levels); flatten the arguments", maxNesting)}
		if !decoded && !(trimmed[0] == '[' && json.Valid(trimmed)) {
			e.code, e.msg = codeParseError, "parse error: "+e.msg[len("invalid request: "):]
		}
		return e
	}
	if trimmed[0] == '[' && json.Valid(trimmed) {
		return &envelopeError{code: codeInvalidRequest, msg: "invalid request: JSON-RPC batches are not supported (protocol 2025-06-18 and later removed them); send one request per message"}
	}
	if !decoded {
		return nil
	}
	switch {
	case m.ID == nil || validID != nil:
	case string(m.ID) == "null" && m.Method == nil:
		// A client's error response to a request it could not read
		// carries a null id, as JSON-RPC says.
	default:
		return &envelopeError{code: codeInvalidRequest, msg: fmt.Sprintf("invalid request: id must be a string or a number, got %s", kind(m.ID))}
	}
	if m.JSONRPC != nil && m.JSONRPC[0] != '"' {
		return &envelopeError{code: codeInvalidRequest, id: validID, msg: fmt.Sprintf(`invalid request: jsonrpc must be the string "2.0", got %s`, kind(m.JSONRPC))}
	}
	if m.Method != nil && m.Method[0] != '"' {
		return &envelopeError{code: codeInvalidRequest, id: validID, msg: fmt.Sprintf("invalid request: method must be a string, got %s", kind(m.Method))}
	}
	return nil
}

// kind names a JSON value's type for an error message.
func kind(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '"':
		return "a string"
	}
	return "a number"
}

// postBody reads a POST's body once for every middleware that looks at it
// and leaves it to be read again by the next: ok is false for other
// requests and for a body that cannot be read (the SDK reports those).
func postBody(r *http.Request) (body []byte, ok bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, false
	}
	if rb, read := r.Body.(*readBody); read {
		return rb.b, true
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, false
	}
	r.Body = &readBody{Reader: bytes.NewReader(b), b: b}
	return b, true
}

// readBody is a request body postBody has read.
type readBody struct {
	*bytes.Reader
	b []byte
}

func (*readBody) Close() error { return nil }

// checkedHTTP answers refused POST bodies with 400 and the JSON-RPC error.
func checkedHTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := postBody(r)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		if e := checkEnvelope(body); e != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(append(e.response(), '\n'))
			return
		}
		w, r = relaying(w, r, body)
		h.ServeHTTP(w, r)
	})
}

// syncWriter serializes whole-line writes from the stdio server and from
// kiln's stdio read loop, and closes failed at the first write that fails.
type syncWriter struct {
	mu     sync.Mutex
	w      io.Writer
	err    error // the first failed write's; under mu
	failed chan struct{}
}

func newSyncWriter(w io.Writer) *syncWriter {
	return &syncWriter{w: w, failed: make(chan struct{})}
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
		close(s.failed)
	}
	return n, err
}

// failure is the first failed write's error, once failed is closed.
func (s *syncWriter) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
