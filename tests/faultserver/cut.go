package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

// cutStreams breaks the network connection of every tools/call of tool
// (FAULT_HTTP_CUT_STREAM) right after the first SSE event of its response
// stream reaches the client: a connection lost mid-call, as a proxy or a
// flaky network causes. The server keeps the session and an event store
// (enabled with the fault), so the call runs on and its result waits to be
// replayed to a client that resumes the stream with Last-Event-ID.
func cutStreams(tool string, events *eventLog, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
			events.add("resume last-event-id=%s", id)
		}
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m wireMessage
		if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" || m.Params.Name != tool {
			next.ServeHTTP(w, r)
			return
		}
		// After a hijack net/http no longer ends the request when the
		// connection dies, as it otherwise would; the cutter does.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		next.ServeHTTP(&cutter{ResponseWriter: w, events: events, cancel: cancel, what: "call " + tool + " id=" + rawID(m.ID)}, r.WithContext(ctx))
	})
}

// errCut is what writes after the cut return.
var errCut = errors.New("faultserver: connection cut")

// cutter passes the response on until the first flush, flushes it, then
// closes the connection under the unfinished chunked body: the client reads
// an unexpected EOF, not an end (a reset could discard the flushed event
// before the client reads it).
type cutter struct {
	http.ResponseWriter
	events *eventLog
	cancel context.CancelFunc
	what   string

	mu  sync.Mutex
	cut bool
}

func (c *cutter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return 0, errCut
	}
	return c.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController, which the SDK flushes
// through, calls first.
func (c *cutter) FlushError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return errCut
	}
	rc := http.NewResponseController(c.ResponseWriter)
	if err := rc.Flush(); err != nil {
		return err
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return err
	}
	_ = conn.Close()
	c.cancel()
	c.cut = true
	c.events.add("cut stream of %s", c.what)
	return nil
}

func (c *cutter) Flush() { _ = c.FlushError() }
