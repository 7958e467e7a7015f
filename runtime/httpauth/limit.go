package httpauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
)

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// limitAndServe enforces the body and session limits around h.
func (g *Guard) limitAndServe(w http.ResponseWriter, r *http.Request, h http.Handler) {
	// A declared length over the cap is refused before reading a byte.
	if r.ContentLength > g.maxBody {
		g.log.Debug("http request refused", "reason", "body too large", "content_length", r.ContentLength, "remote", r.RemoteAddr)
		g.tooLarge(w)
		return
	}
	var body *limitedBody
	if r.Body != nil && r.Body != http.NoBody {
		// MaxBytesReader gets the server's own writer so it can mark the
		// connection for closing; a chunked body only trips it when read,
		// which recorder turns into the same 413.
		body = &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, g.maxBody)}
		r.Body = body
	}

	client := clientIP(r)
	sid := r.Header.Get(sessionHeader)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == ssePath:
		release, ok := g.sessions.openSSE(client)
		if !ok {
			g.tooMany(w, client)
			return
		}
		defer release()
	case r.Method == http.MethodPost && g.sessions.full(client):
		// Only an initialize opens a session, and reading the body to
		// tell costs a copy, so look only when the client is at its cap.
		init, err := peekInitialize(r)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			g.tooLarge(w)
			return
		case err != nil:
			plain(w, http.StatusBadRequest, "could not read request body")
			return
		case init:
			g.tooMany(w, client)
			return
		}
	}
	if sid != "" && g.sessions.terminated(sid) {
		jsonRPCError(w, http.StatusNotFound, -32001, "session "+strconv.Quote(sid)+" was terminated; initialize a new session")
		return
	}
	if sid != "" {
		g.sessions.begin(client, sid)
		defer g.sessions.end(client, sid)
	}

	rec := &recorder{ResponseWriter: w, g: g, body: body}
	rec.onHeader = func(code int, hdr http.Header) {
		if id := hdr.Get(sessionHeader); id != "" && code < 300 {
			g.sessions.add(client, id)
		}
	}
	h.ServeHTTP(rec, r)
	rec.finish()
	if sid != "" && (r.Method == http.MethodDelete || rec.status == http.StatusNotFound) {
		g.sessions.remove(client, sid)
	}
	if sid != "" && r.Method == http.MethodDelete && rec.status < 300 {
		g.sessions.terminate(sid)
	}
}

// peekInitialize reads r's body, puts it back, and reports whether it is an
// initialize request, the only one that opens a session.
func peekInitialize(r *http.Request) (bool, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return false, nil
	}
	buf, err := io.ReadAll(r.Body)
	if err != nil {
		return false, err
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	var msg struct {
		Method string `json:"method"`
	}
	// Anything that does not decode (a batch, garbage) is not an
	// initialize; the handler reports the error.
	_ = json.Unmarshal(buf, &msg)
	return msg.Method == "initialize", nil
}

// clientIP keys the session count. Behind a reverse proxy every client
// shares the proxy's address; X-Forwarded-For is not trusted because
// nothing here knows which proxies are ours.
func clientIP(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	return r.RemoteAddr
}

func (g *Guard) tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	jsonRPCError(w, http.StatusRequestEntityTooLarge, -32600,
		fmt.Sprintf("request body is larger than %d bytes: send a smaller request or raise gateway.http.max_body", g.maxBody))
}

func (g *Guard) tooMany(w http.ResponseWriter, client string) {
	g.log.Debug("http request refused", "reason", "too many sessions", "client", client, "max", g.sessions.max)
	jsonRPCError(w, http.StatusTooManyRequests, -32000,
		fmt.Sprintf("too many open sessions from this client (limit %d): close sessions you no longer use (HTTP DELETE /mcp with their Mcp-Session-Id header, or close /sse streams) or raise gateway.http.max_sessions", g.sessions.max))
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

// limitedBody remembers that the body ran over its cap, however the handler
// reacted to the read error.
type limitedBody struct {
	io.ReadCloser
	over atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooBig *http.MaxBytesError
	if err != nil && errors.As(err, &tooBig) {
		b.over.Store(true)
	}
	return n, err
}

// recorder sits between the guard and the handler: it turns whatever the
// handler answers to an oversized body into the 413, and shows the response
// headers to the session counter before they are sent.
type recorder struct {
	http.ResponseWriter
	g        *Guard
	body     *limitedBody
	onHeader func(code int, h http.Header)
	status   int  // 0 until the final header is written
	swallow  bool // the 413 replaced the handler's response
}

// WriteHeader implements http.ResponseWriter.
func (w *recorder) WriteHeader(code int) {
	if w.status != 0 {
		if !w.swallow {
			w.ResponseWriter.WriteHeader(code) // let net/http report the superfluous call
		}
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.status = code
	if w.body != nil && w.body.over.Load() {
		w.swallow = true
		w.status = http.StatusRequestEntityTooLarge
		for k := range w.Header() {
			w.Header().Del(k)
		}
		w.g.tooLarge(w.ResponseWriter)
		return
	}
	w.onHeader(code, w.Header())
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher, which the SSE streams need.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.swallow {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish sends the 413 when the handler hit the cap and wrote nothing.
func (w *recorder) finish() {
	if w.status == 0 && w.body != nil && w.body.over.Load() {
		w.WriteHeader(http.StatusOK)
	}
}
