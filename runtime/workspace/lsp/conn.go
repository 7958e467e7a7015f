package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// maxMessage bounds one message from the server: a workspace/symbol
// answer of a big repository is a few MiB; anything past this is a
// broken or hostile server.
const maxMessage = 64 << 20

// ErrClosed is returned for requests on a connection whose server has
// gone (exited, crashed or was stopped).
var ErrClosed = errors.New("language server connection closed")

// ResponseError is an error the server answered a request with.
type ResponseError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *ResponseError) Error() string { return e.Message }

// Diagnostics are the latest diagnostics the server published for one
// document, and how many times it published for it.
type Diagnostics struct {
	Items []Diagnostic
	Seq   int
}

// Conn is a JSON-RPC connection to one language server.
type Conn struct {
	w       io.WriteCloser
	writeMu sync.Mutex
	nextID  atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan *message
	diags   map[string]Diagnostics // by URI
	// published counts every publication, of any document.
	published int
	// changed is closed and replaced whenever diagnostics arrive, so a
	// waiter wakes up without polling.
	changed chan struct{}
	err     error // set once the read loop ended
	done    chan struct{}
}

type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *ResponseError   `json:"error,omitempty"`
}

// NewConn starts reading the server's messages from r; requests go to w.
func NewConn(r io.Reader, w io.WriteCloser) *Conn {
	c := &Conn{w: w, pending: map[int64]chan *message{}, diags: map[string]Diagnostics{}, changed: make(chan struct{}), done: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

// Done is closed when the server's output ends.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close stops writing to the server; the read loop ends with its output.
func (c *Conn) Close() error { return c.w.Close() }

func (c *Conn) readLoop(r *bufio.Reader) {
	var err error
	for {
		var data []byte
		if data, err = readFrame(r); err != nil {
			break
		}
		var m message
		if json.Unmarshal(data, &m) != nil {
			continue // not JSON-RPC: ignore it rather than end the session
		}
		c.dispatch(&m)
	}
	if errors.Is(err, io.EOF) {
		err = ErrClosed
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	close(c.done)
}

func readFrame(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("message without Content-Length")
	}
	if length > maxMessage {
		return nil, fmt.Errorf("message of %d bytes, over the %d MiB limit", length, maxMessage>>20)
	}
	buf := make([]byte, length)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

func (c *Conn) dispatch(m *message) {
	switch {
	case m.ID != nil && m.Method != "":
		c.answer(m)
	case m.ID != nil:
		id, err := strconv.ParseInt(string(*m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.Method == "textDocument/publishDiagnostics":
		var p struct {
			URI         string       `json:"uri"`
			Diagnostics []Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		c.mu.Lock()
		d := c.diags[p.URI]
		c.diags[p.URI] = Diagnostics{Items: p.Diagnostics, Seq: d.Seq + 1}
		c.published++
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// answer replies to the server's own requests: the configuration it asks
// for is empty (each server's defaults), progress tokens and capability
// registrations are accepted, and edits it asks the client to apply are
// refused: kiln applies edits itself, through its resolver.
func (c *Conn) answer(m *message) {
	var result any
	switch m.Method {
	case "workspace/configuration":
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal(m.Params, &p)
		result = make([]any, len(p.Items))
	case "workspace/applyEdit":
		result = map[string]any{"applied": false, "failureReason": "kiln applies edits itself"}
	case "workspace/workspaceFolders":
		result = nil
	}
	_ = c.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

func (c *Conn) write(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	_, err = c.w.Write(data)
	return err
}

// Call sends a request and decodes its result into result (which may be
// nil). It returns when the answer arrives, ctx ends (the request is
// then cancelled at the server) or the connection closes.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ErrClosed)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w", method, ErrClosed)
		}
		if m.Error != nil {
			return m.Error
		}
		if result == nil || len(m.Result) == 0 {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: decode the answer: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		_ = c.Notify("$/cancelRequest", map[string]any{"id": id})
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Diagnostics returns what the server last published for uri.
func (c *Conn) Diagnostics(uri string) Diagnostics {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.diags[uri]
}

// Published counts the diagnostics publications so far, of any document.
func (c *Conn) Published() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.published
}

// AllDiagnostics returns the latest diagnostics of every document.
func (c *Conn) AllDiagnostics() map[string]Diagnostics {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Diagnostics, len(c.diags))
	for k, v := range c.diags {
		out[k] = v
	}
	return out
}

// DiagnosticsChanged is closed at the next publication (or when the
// connection ends).
func (c *Conn) DiagnosticsChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Shutdown asks the server to shut down and exit, within ctx.
func (c *Conn) Shutdown(ctx context.Context) error {
	err := c.Call(ctx, "shutdown", nil, nil)
	_ = c.Notify("exit", nil)
	return err
}
