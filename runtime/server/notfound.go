package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// mcp-go v1.2.1 answers resources/read of an unknown URI with an error that
// lacks the data.uri SEP-2164 asks for, and offers no hook to add it. These
// shims add it on the way out, on stdio and HTTP, recognizing the SDK's own
// message (which carries the URI). The conformance suite checks the result,
// so a change in the SDK's wording shows up there.
var notFoundRE = regexp.MustCompile(`^handler not found for resource URI '(.*)': resource not found$`)

var notFoundMarker = []byte("handler not found for resource URI")

// withNotFoundURI returns msg, a JSON-RPC message, with data.uri added to a
// resource-not-found error that has no data; any other message is returned
// as it is.
func withNotFoundURI(msg []byte) []byte {
	msg = withRootsParams(msg) // every outgoing message passes here
	if !bytes.Contains(msg, notFoundMarker) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if json.Unmarshal(m["error"], &e) != nil || len(e.Data) > 0 {
		return msg
	}
	sub := notFoundRE.FindStringSubmatch(e.Message)
	if sub == nil {
		return msg
	}
	raw, err := json.Marshal(map[string]any{"code": e.Code, "message": e.Message, "data": map[string]string{"uri": sub[1]}})
	if err != nil {
		return msg
	}
	m["error"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// lineWriter passes whole lines to w through patch, holding back a partial
// line until its newline arrives. The stdio server writes one message per
// line.
type lineWriter struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	patch func([]byte) []byte
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, p...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := lw.patch(lw.buf[:i])
		if _, err := lw.w.Write(append(line[:len(line):len(line)], '\n')); err != nil {
			return len(p), err
		}
		lw.buf = lw.buf[i+1:]
	}
}

// notFoundHTTP patches POST responses with patch (withNotFoundURI, or the
// server's patchOut): a JSON body is buffered (a response is one small
// message) and an event stream is patched line by line.
func notFoundHTTP(h http.Handler, patch func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		pw := &patchWriter{ResponseWriter: w, listenID: listenRequestID(r), patch: patch}
		h.ServeHTTP(pw, r)
		pw.finish()
	})
}

// patchSSE patches the legacy SSE transport's event stream (a GET that
// carries every answer) line by line, as notFoundHTTP does a POST's.
func patchSSE(h http.Handler, patch func([]byte) []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &patchWriter{ResponseWriter: w, patch: patch}
		h.ServeHTTP(pw, r)
		pw.finish()
	})
}

type patchWriter struct {
	http.ResponseWriter
	// listenID is the id of a subscriptions/listen request, else nil;
	// acked records that its stream carried a notification.
	listenID json.RawMessage
	acked    bool
	patch    func([]byte) []byte
	mode     int // 0 undecided, 1 pass through, 2 buffer JSON, 3 SSE lines
	status   int
	body     bytes.Buffer
	lines    *lineWriter
}

func (p *patchWriter) decide() {
	if p.mode != 0 {
		return
	}
	ct := p.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		p.mode = 2
		p.Header().Del("Content-Length")
	case strings.HasPrefix(ct, "text/event-stream"):
		p.mode = 3
		p.Header().Del("Content-Length")
		p.lines = &lineWriter{w: p.ResponseWriter, patch: func(line []byte) []byte {
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				return line
			}
			out := append([]byte("data: "), p.patch(data)...)
			if ack := p.missingAck(data); ack != nil {
				// Emit the acknowledgement as its own event first.
				out = append(append(append([]byte("data: "), ack...), "\n\nevent: message\n"...), out...)
			}
			return out
		}}
	default:
		p.mode = 1
	}
}

func (p *patchWriter) WriteHeader(code int) {
	p.decide()
	if p.mode == 2 {
		p.status = code
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *patchWriter) Write(b []byte) (int, error) {
	p.decide()
	switch p.mode {
	case 2:
		return p.body.Write(b)
	case 3:
		return p.lines.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush keeps event streams streaming.
func (p *patchWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && p.mode != 2 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (p *patchWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func (p *patchWriter) finish() {
	switch p.mode {
	case 2:
		if p.status != 0 {
			p.ResponseWriter.WriteHeader(p.status)
		}
		p.ResponseWriter.Write(p.patch(bytes.TrimRight(p.body.Bytes(), "\n")))
	case 3:
		if len(p.lines.buf) > 0 {
			p.ResponseWriter.Write(p.lines.buf)
		}
	}
}

// mcp-go v1.2.1 queues a subscriptions/listen acknowledgement as a
// notification and, when nothing can be subscribed (kiln declares no
// list_changed capability), races it against the immediate result on the
// same stream: sometimes the result wins and the acknowledgement is lost,
// though SEP-2575 makes it the stream's first message. missingAck returns
// the acknowledgement to send before data when data is the listen result
// and no notification came first.
func (p *patchWriter) missingAck(data []byte) []byte {
	if p.listenID == nil || p.acked {
		return nil
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	p.acked = true
	if m.Method != "" || !bytes.Equal(bytes.TrimSpace(m.ID), bytes.TrimSpace(p.listenID)) {
		return nil
	}
	ack, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/subscriptions/acknowledged",
		"params": map[string]any{
			"_meta":         map[string]json.RawMessage{"io.modelcontextprotocol/subscriptionId": p.listenID},
			"notifications": map[string]any{},
		},
	})
	if err != nil {
		return nil
	}
	return ack
}

// listenRequestID returns the id of a subscriptions/listen request, or nil
// for any other request; the body is put back for the handler.
func listenRequestID(r *http.Request) json.RawMessage {
	if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Mcp-Method") != "" && r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		return nil
	}
	buf, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), errReader{err}))
	if err != nil {
		return nil
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(buf, &m) != nil || m.Method != "subscriptions/listen" || len(m.ID) == 0 {
		return nil
	}
	return m.ID
}

// errReader replays a read error after the bytes read before it, so a body
// over the size limit still fails for the handler.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
