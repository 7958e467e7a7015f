package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resumption of streamable HTTP SSE streams (spec 2025-11-25, "Resumability
// and Redelivery"). mcp-go resumes a POST's stream only when the server ends
// it cleanly, and reopens the GET stream after a fixed second without
// Last-Event-ID, so events sent while it was away are lost. resumer sits
// under the SDK as the HTTP client's RoundTripper and hands it one body
// that outlives the connections behind it: when a stream ends or breaks
// before it is done, the body waits the server's retry hint, reopens the
// stream with a GET carrying Last-Event-ID and goes on with what the server
// replays. The SDK sees one unbroken stream of whole events.
//
// A POST's stream is done once the response to its request has passed; the
// GET stream is never done. Protocol 2026-07-28 dropped resumable streams,
// so its requests pass untouched, as does a stream whose server gave it no
// event ID (there is nothing to resume from).
type resumer struct {
	base http.RoundTripper
}

// Bounds on resuming: the wait when the server sent no retry field (what
// mcp-go uses), the least wait taken from one so a server asking for none
// is not polled in a tight loop, the most, and how many reconnects in a row
// may fail before the stream's error goes up.
const (
	defaultResumeDelay = time.Second
	minResumeDelay     = 10 * time.Millisecond
	maxResumeDelay     = time.Minute
	maxResumeAttempts  = 5
)

// newResumer wraps base (nil means http.DefaultTransport).
func newResumer(base http.RoundTripper) *resumer {
	if base == nil {
		base = http.DefaultTransport
	}
	return &resumer{base: base}
}

// CloseIdleConnections passes through, so Conn.Close can drop them.
func (r *resumer) CloseIdleConnections() {
	if c, ok := r.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (r *resumer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !isEventStream(resp.Header) ||
		req.Header.Get("Last-Event-ID") != "" || req.Header.Get("Mcp-Protocol-Version") >= statelessProtocol {
		return resp, err
	}
	var want any // the POST's request id; nil for the GET stream
	if req.Method == http.MethodPost {
		if want = requestID(req); want == nil {
			return resp, nil // not a request: no response to wait for
		}
	} else if req.Method != http.MethodGet {
		return resp, nil
	}
	resp.Body = &resumableBody{r: r, req: req, want: want, cur: resp.Body, br: bufio.NewReader(resp.Body),
		retry: defaultResumeDelay, closed: make(chan struct{})}
	return resp, nil
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// requestID returns the JSON-RPC id of the request a POST carries, or nil
// for a notification, a response or a batch.
func requestID(req *http.Request) any {
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var m struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.NewDecoder(body).Decode(&m) != nil || m.Method == "" {
		return nil
	}
	switch m.ID.(type) {
	case float64, string:
		return m.ID
	}
	return nil
}

// resumableBody is the stream the SDK reads. Read and Close may run on
// different goroutines (the SDK closes the body to stop a blocked read).
type resumableBody struct {
	r    *resumer
	req  *http.Request
	want any

	// Read's own state.
	br      *bufio.Reader
	out     []byte // whole events ready for the caller
	event   []byte // the event being read, released at its blank line
	eventID string
	hasID   bool
	lastID  string
	retry   time.Duration
	done    bool  // the POST's response has passed
	err     error // why the stream ended for good, after out is read

	mu        sync.Mutex
	cur       io.ReadCloser // the connection read now
	closed    chan struct{}
	closeOnce sync.Once
}

func (b *resumableBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur.Close()
}

func (b *resumableBody) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

func (b *resumableBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		line, err := b.br.ReadBytes('\n')
		if err == nil {
			b.line(line)
			continue
		}
		// The stream ended or broke. Resuming drops a partial last line
		// or event: the server replays it after the last whole event.
		if b.done || b.lastID == "" || b.isClosed() || b.req.Context().Err() != nil {
			b.out = append(append(b.out, b.event...), line...)
			b.event, b.err = nil, err
			break
		}
		if rerr := b.resume(); rerr != nil {
			b.err = fmt.Errorf("%w; resuming it: %w", err, rerr)
		}
	}
	if len(b.out) == 0 {
		return 0, b.err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// line takes one line of the stream, keeping what resuming needs: the
// event's id (it counts once the event is whole, as in the SSE spec), the
// retry hint, and for a POST whether this event carries its response.
func (b *resumableBody) line(raw []byte) {
	b.event = append(b.event, raw...)
	l := strings.TrimRight(string(raw), "\r\n")
	switch {
	case l == "":
		if b.hasID {
			b.lastID, b.hasID = b.eventID, false
		}
		if b.want != nil && !b.done && isResponseTo(b.event, b.want) {
			b.done = true
		}
		b.out = append(b.out, b.event...)
		b.event = b.event[:0]
	case strings.HasPrefix(l, "id:"):
		if v := strings.TrimPrefix(strings.TrimPrefix(l, "id:"), " "); !strings.ContainsRune(v, 0) {
			b.eventID, b.hasID = v, true
		}
	case strings.HasPrefix(l, "retry:"):
		v := strings.TrimPrefix(strings.TrimPrefix(l, "retry:"), " ")
		if ms, err := strconv.ParseUint(v, 10, 31); err == nil && strings.Trim(v, "0123456789") == "" {
			b.retry = min(max(time.Duration(ms)*time.Millisecond, minResumeDelay), maxResumeDelay)
		}
	}
}

// isResponseTo reports whether the SSE event holds the JSON-RPC response
// (a result or error, not a request) with id want.
func isResponseTo(event []byte, want any) bool {
	var data []byte
	for l := range bytes.Lines(event) {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r\n"), []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			data = append(data, '\n')
		}
	}
	var m struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != "" || (m.Result == nil && m.Error == nil) {
		return false
	}
	switch id := m.ID.(type) {
	case float64, string:
		return id == want
	}
	return false
}

// resume waits the retry hint and reopens the stream from the last event,
// trying again while attempts last. A server that closes the stream again
// at once (polling, SEP-1699) is reconnected to for as long as the
// request's context lives: each reconnect that opens starts the count over.
func (b *resumableBody) resume() error {
	ctx := b.req.Context()
	var last error
	for range maxResumeAttempts {
		timer := time.NewTimer(b.retry)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-b.closed:
			timer.Stop()
			return errors.New("SSE stream closed")
		}
		body, err := b.reopen(ctx)
		if err != nil {
			if errors.Is(err, errNotResumable) || ctx.Err() != nil {
				return err
			}
			last = err
			continue
		}
		b.mu.Lock()
		if b.isClosed() {
			b.mu.Unlock()
			body.Close()
			return errors.New("SSE stream closed")
		}
		_ = b.cur.Close()
		b.cur, b.br = body, bufio.NewReader(body)
		b.mu.Unlock()
		b.event = b.event[:0]
		b.hasID = false
		return nil
	}
	return fmt.Errorf("%d reconnects with Last-Event-ID %q failed, the last: %w", maxResumeAttempts, b.lastID, last)
}

// errNotResumable is a server's refusal of a resumption GET that another
// attempt would not change (it offers no GET stream, or forgot the session).
var errNotResumable = errors.New("the server does not resume this stream")

func (b *resumableBody) reopen(ctx context.Context) (io.ReadCloser, error) {
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, b.req.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	get.Header = b.req.Header.Clone()
	get.Header.Del("Content-Type")
	get.Header.Del("Content-Length")
	get.Header.Set("Accept", "text/event-stream")
	if b.lastID != "" {
		get.Header.Set("Last-Event-ID", b.lastID)
	}
	resp, err := b.r.base.RoundTrip(get)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest:
		resp.Body.Close()
		return nil, fmt.Errorf("%w (GET with Last-Event-ID answered %s)", errNotResumable, resp.Status)
	case resp.StatusCode != http.StatusOK || !isEventStream(resp.Header):
		resp.Body.Close()
		return nil, fmt.Errorf("resume SSE stream: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return resp.Body, nil
}
