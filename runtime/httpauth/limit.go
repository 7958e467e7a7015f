package httpauth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Headers of the streamable HTTP transport.
const (
	sessionHeader  = "Mcp-Session-Id"
	protocolHeader = "Mcp-Protocol-Version"
)

// mcpPath is the streamable HTTP endpoint (runtime/server registers it).
const mcpPath = "/mcp"

// under reports whether path is endpoint or a profile's endpoint under it
// (/mcp/NAME, /sse/NAME).
func under(path, endpoint string) bool {
	return path == endpoint || strings.HasPrefix(path, endpoint+"/") && !strings.Contains(path[len(endpoint)+1:], "/")
}

// limitAndServe enforces the body and session rules around h for an
// authenticated request from identity.
func (g *Guard) limitAndServe(w http.ResponseWriter, r *http.Request, h http.Handler, identity string) {
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = g.readBody(w, r); !ok {
			return
		}
	}
	// The session rules are those of protocol revisions with sessions;
	// 2026-07-28 and later are stateless, and the SDK ignores the header.
	if modernProtocol(r.Header.Get(protocolHeader)) {
		h.ServeHTTP(w, r)
		return
	}
	sid := r.Header.Get(sessionHeader)
	switch {
	case r.Method == http.MethodGet && (under(r.URL.Path, ssePath) || (under(r.URL.Path, mcpPath) && sid == "")):
		// A stream that is its own session.
		g.serveStream(w, r, h, identity)
	case under(r.URL.Path, mcpPath) && r.Method == http.MethodPost && isInitialize(body):
		g.serveInitialize(w, r, h, identity)
	case under(r.URL.Path, mcpPath) && sid != "":
		g.serveOnSession(w, r, h, identity, sid)
	default:
		h.ServeHTTP(w, r)
	}
}

// readBody reads a POST body whole, bounded in size by max_body and in
// time by read_timeout, so the handler never waits on the network; a
// failure is answered here and the connection closed.
func (g *Guard) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	// Recorders in tests do not support deadlines; a real connection does.
	_ = rc.SetReadDeadline(g.now().Add(g.readTimeout))
	// A declared length over the cap is refused before kiln keeps a byte.
	// A body a little over it is read to its end first (within the read
	// deadline), so the client, still writing, reads the 413 rather than
	// a broken pipe; a far larger one is refused at once.
	if r.ContentLength > g.maxBody {
		g.log.Debug("http request refused", "reason", "body too large", "content_length", r.ContentLength, "remote", r.RemoteAddr)
		g.tooLarge(w, r, r.ContentLength <= g.maxBody+drainLimit && drain(r.Body, r.ContentLength))
		return nil, false
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(r.Body, g.maxBody+1))
	var ne net.Error
	switch {
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		g.log.Debug("http request refused", "reason", "body read timed out", "read", buf.Len(), "remote", r.RemoteAddr)
		hangUp(w, r)
		jsonRPCError(w, http.StatusRequestTimeout, -32600,
			fmt.Sprintf("the request body did not arrive within %s (gateway.http.read_timeout): send the whole body at once", g.readTimeout))
		return nil, false
	case err != nil:
		hangUp(w, r)
		jsonRPCError(w, http.StatusBadRequest, -32700, "could not read the request body: "+err.Error())
		return nil, false
	case int64(buf.Len()) > g.maxBody:
		g.tooLarge(w, r, drain(r.Body, drainLimit))
		return nil, false
	}
	// The body is in; what follows (a long tool call, an SSE response)
	// must not be cut by the read deadline.
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	r.ContentLength = int64(buf.Len())
	return buf.Bytes(), true
}

// serveStream serves a GET stream that is a session by itself.
func (g *Guard) serveStream(w http.ResponseWriter, r *http.Request, h http.Handler, identity string) {
	victims, ok := g.sessions.reserve(identity)
	g.free(victims)
	if !ok {
		g.tooMany(w, identity)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	closeStream := g.sessions.openStream(identity, cancel)
	defer closeStream()
	h.ServeHTTP(w, r.WithContext(ctx))
}

// serveInitialize opens a session, learning its id from the response.
func (g *Guard) serveInitialize(w http.ResponseWriter, r *http.Request, h http.Handler, identity string) {
	victims, ok := g.sessions.reserve(identity)
	g.free(victims)
	if !ok {
		g.tooMany(w, identity)
		return
	}
	filled := false
	rec := &recorder{ResponseWriter: w, onHeader: func(code int, hdr http.Header) {
		if id := hdr.Get(sessionHeader); id != "" && code < 300 && !filled {
			filled = true
			g.sessions.fill(identity, id, r.URL.Path)
		}
	}}
	defer func() {
		if !filled {
			g.sessions.drop(identity)
		}
	}()
	h.ServeHTTP(rec, r)
}

// serveOnSession serves a request naming a session, which must be one
// this identity opened.
func (g *Guard) serveOnSession(w http.ResponseWriter, r *http.Request, h http.Handler, identity, sid string) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	end, replaced, why, ok := g.sessions.begin(identity, sid, r.Method == http.MethodGet, cancel)
	if !ok {
		shown := sid
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		g.log.Debug("http request refused", "reason", "unknown session", "session", shown, "identity", identity)
		jsonRPCError(w, http.StatusNotFound, -32001, fmt.Sprintf(
			"session %s is not open: %s; send initialize without an Mcp-Session-Id header to start a new session", strconv.Quote(shown), why))
		return
	}
	if replaced != nil {
		select {
		case <-replaced:
		case <-ctx.Done():
			end()
			return
		}
	}
	rec := &recorder{ResponseWriter: w}
	h.ServeHTTP(rec, r.WithContext(ctx))
	end()
	switch {
	case r.Method == http.MethodDelete && rec.status < 300:
		g.sessions.remove(sid, "the client closed it with DELETE")
	case rec.status == http.StatusNotFound:
		g.sessions.remove(sid, "the server no longer knew it")
	}
}

// free makes the SDK forget evicted sessions: their open requests are
// cancelled, and a streamable session is terminated through the handler
// with the DELETE a client would send, which drops its state.
func (g *Guard) free(victims []victim) {
	for _, v := range victims {
		for _, c := range v.cancels {
			c()
		}
		if v.stream || g.inner == nil {
			g.log.Debug("http session closed", "session", v.id, "reason", v.why)
			continue
		}
		r, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, cmp.Or(v.path, mcpPath), nil)
		if err != nil {
			continue
		}
		r.Host = "localhost"
		r.Header.Set(sessionHeader, v.id)
		d := &discard{}
		g.inner.ServeHTTP(d, r)
		g.log.Debug("http session closed", "session", v.id, "reason", v.why, "terminated", d.status == http.StatusOK)
	}
}

// Sweep evicts sessions idle longer than gateway.http.session_idle and
// frees them in the SDK. Opening a session sweeps too; call Sweep now and
// then so idle sessions are freed when nobody opens new ones.
func (g *Guard) Sweep() { g.free(g.sessions.sweep()) }

// modernProtocol reports whether v names a protocol revision without
// sessions (2026-07-28 and later; revisions are dates, so they order as
// strings).
func modernProtocol(v string) bool {
	return len(v) == len("2026-07-28") && v >= "2026-07-28"
}

// isInitialize reports whether body is an initialize request, the only
// one that opens a session. Anything that does not decode is not; the
// handler reports the error.
func isInitialize(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method == "initialize"
}

// clientIP keys the connection caps and, without JWTs, the session caps.
// Behind a reverse proxy every client shares the proxy's address;
// X-Forwarded-For is not trusted because nothing here knows which proxies
// are ours.
func clientIP(r *http.Request) string {
	return hostOf(r.RemoteAddr)
}

func hostOf(addr string) string {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap.Addr().Unmap().String()
	}
	return addr
}

// hangUp closes the connection after the response without reading what
// is left of the body: net/http would otherwise wait for up to 256 KiB of
// it, with no deadline, before even sending the response.
func hangUp(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.Body != nil && r.Body != http.NoBody {
		_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
	}
}

// drainLimit is how much of a refused body kiln reads past max_body so the
// client can read the refusal (net/http's own allowance).
const drainLimit = 256 << 10

// drain reads and discards the rest of a refused body, at most n bytes
// (under the read deadline already set); it reports whether the body
// ended.
func drain(body io.Reader, n int64) bool {
	if body == nil || body == http.NoBody {
		return true
	}
	_, err := io.CopyN(io.Discard, body, n+1)
	return err == io.EOF
}

// tooLarge refuses a body over max_body. The connection closes after the
// answer; drained says the body was read to its end, so the answer can be
// sent without cutting the client's upload short.
func (g *Guard) tooLarge(w http.ResponseWriter, r *http.Request, drained bool) {
	if drained {
		w.Header().Set("Connection", "close")
	} else {
		hangUp(w, r)
	}
	jsonRPCError(w, http.StatusRequestEntityTooLarge, -32600,
		fmt.Sprintf("request body is larger than %d bytes: send a smaller request or raise gateway.http.max_body", g.maxBody))
}

func (g *Guard) tooMany(w http.ResponseWriter, identity string) {
	g.log.Debug("http request refused", "reason", "too many sessions", "identity", identity, "max", g.sessions.perIdentity)
	jsonRPCError(w, http.StatusTooManyRequests, -32000,
		fmt.Sprintf("too many open sessions: this client has %d (limit %d, gateway.http.max_sessions) or kiln has %d (gateway.http.max_sessions_total), all with a request or stream open; close sessions you no longer use (HTTP DELETE /mcp with their Mcp-Session-Id header, or close streams)",
			g.sessions.held(identity), g.sessions.perIdentity, g.sessions.total))
}

// jsonRPCError writes an error response an MCP client can show as is.
func jsonRPCError(w http.ResponseWriter, status, code int, msg string) {
	type rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      *int   `json:"id"`
		Error   rpcErr `json:"error"`
	}{"2.0", nil, rpcErr{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// recorder sits between the guard and the handler: it notes the status
// and shows the response headers to onHeader before they are sent.
type recorder struct {
	http.ResponseWriter
	onHeader func(code int, h http.Header)
	status   int // 0 until the final header is written
}

// WriteHeader implements http.ResponseWriter.
func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && (code < 100 || code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		if w.onHeader != nil {
			w.onHeader(code, w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher, which the SSE streams need.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// discard is the response writer of the guard's own DELETEs.
type discard struct{ status int }

func (*discard) Header() http.Header { return http.Header{} }

func (d *discard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	return len(p), nil
}

func (d *discard) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}
