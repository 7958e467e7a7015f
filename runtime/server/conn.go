package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeConn serves one client session of newline-delimited JSON-RPC over
// in/out (a kiln connect relay on the daemon's socket) until in ends or
// ctx does. Unlike ServeStdio, many may run at once: mcp-go's stdio server
// keeps one process-wide session, so each connection gets a session of its
// own here, and a backend's sampling, elicitation or roots request reaches
// the connection whose call asked for it. When in ends, the requests still
// running are canceled and the session ends (Options.SessionEnded), so the
// backends drop what they kept for it.
func (s *Server) ServeConn(ctx context.Context, in io.Reader, out io.Writer) error {
	sess := &connSession{
		id:            "conn-" + randomToken(),
		notifications: make(chan mcp.JSONRPCNotification, 100),
		out:           out,
		patch:         s.patchOut,
		pending:       map[int64]chan connReply{},
		gone:          make(chan struct{}),
	}
	if err := s.mcp.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	// Unregistering tells the dispatcher the session ended; it must run
	// even when ctx has ended.
	defer s.mcp.UnregisterSession(context.WithoutCancel(ctx), sess.id)
	ctx, cancel := context.WithCancel(s.mcp.WithContext(ctx, sess))
	defer cancel()
	var handlers sync.WaitGroup
	defer handlers.Wait()
	defer cancel() // releases handlers blocked on the session
	// Runs first: a question still waiting for this client (a backend's,
	// which may outlive the call) can no longer be answered.
	defer close(sess.gone)
	go sess.forwardNotifications(ctx, s)

	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			s.connMessage(ctx, sess, line, &handlers)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read client messages: %w", err)
		}
	}
}

// connMessage routes one line: an answer to a question kiln asked, a
// request served off the read loop (a handler may wait for the client),
// or a notification served in order.
func (s *Server) connMessage(ctx context.Context, sess *connSession, line []byte, handlers *sync.WaitGroup) {
	if len(line) == 0 || (len(line) == 1 && line[0] == '\n') {
		return
	}
	if e := checkEnvelope(line); e != nil {
		sess.writeLine(e.response())
		return
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &head) == nil && head.Method == "" && head.ID != nil && (head.Result != nil || head.Error != nil) {
		sess.answer(head.ID, head.Result, head.Error)
		return
	}
	msg := json.RawMessage(line)
	if head.ID == nil || string(head.ID) == "null" {
		s.connHandle(ctx, sess, nil, msg)
		return
	}
	handlers.Go(func() { s.connHandle(ctx, sess, head.ID, msg) })
}

// connHandle serves one message, turning a handler's panic into an
// internal error for the request instead of the end of the daemon.
func (s *Server) connHandle(ctx context.Context, sess *connSession, id json.RawMessage, msg json.RawMessage) {
	var resp mcp.JSONRPCMessage
	func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("request handler panicked", "session", sess.id, "panic", p, "stack", string(debug.Stack()))
				if id != nil {
					resp = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, "kiln failed with an internal error; the gateway logged it. Try again.", nil)
				}
			}
		}()
		resp = s.mcp.HandleMessage(ctx, msg)
	}()
	if resp == nil {
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		s.log.Error("could not encode a response", "session", sess.id, "err", err)
		return
	}
	sess.writeLine(b)
}

// connSession is one connection's client session: what mcp-go's stdio
// session is, per connection.
type connSession struct {
	id            string
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	level         atomic.Value // mcp.LoggingLevel
	info          atomic.Value // mcp.Implementation
	caps          atomic.Value // mcp.ClientCapabilities
	proto         atomic.Value // string

	wmu   sync.Mutex
	out   io.Writer
	patch func([]byte) []byte // Server.patchOut

	nextID  atomic.Int64
	pmu     sync.Mutex
	pending map[int64]chan connReply
	// gone is closed when the connection ends.
	gone chan struct{}
}

type connReply struct {
	result json.RawMessage
	err    error
}

var (
	_ server.ClientSession          = (*connSession)(nil)
	_ server.SessionWithLogging     = (*connSession)(nil)
	_ server.SessionWithClientInfo  = (*connSession)(nil)
	_ server.SessionWithSampling    = (*connSession)(nil)
	_ server.SessionWithElicitation = (*connSession)(nil)
	_ server.SessionWithRoots       = (*connSession)(nil)
)

func (c *connSession) SessionID() string                                   { return c.id }
func (c *connSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notifications }
func (c *connSession) Initialize()                                         { c.initialized.Store(true) }
func (c *connSession) Initialized() bool                                   { return c.initialized.Load() }
func (c *connSession) SetLogLevel(l mcp.LoggingLevel)                      { c.level.Store(l) }
func (c *connSession) SetClientInfo(i mcp.Implementation)                  { c.info.Store(i) }
func (c *connSession) SetClientCapabilities(cc mcp.ClientCapabilities)     { c.caps.Store(cc) }
func (c *connSession) SetProtocolVersion(v string)                         { c.proto.Store(v) }

func (c *connSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := c.level.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

func (c *connSession) GetClientInfo() mcp.Implementation {
	i, _ := c.info.Load().(mcp.Implementation)
	return i
}

func (c *connSession) GetClientCapabilities() mcp.ClientCapabilities {
	cc, _ := c.caps.Load().(mcp.ClientCapabilities)
	return cc
}

// ProtocolVersion is the version initialize negotiated, or "".
func (c *connSession) ProtocolVersion() string {
	v, _ := c.proto.Load().(string)
	return v
}

// writeLine writes one message; every outgoing message passes the same
// patch as on stdio (Server.patchOut).
func (c *connSession) writeLine(b []byte) {
	if c.patch != nil {
		b = c.patch(b)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// A failed write means the client is gone; the read loop sees it end.
	_, _ = c.out.Write(b)
}

func (c *connSession) forwardNotifications(ctx context.Context, s *Server) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-c.notifications:
			b, err := json.Marshal(n)
			if err != nil {
				s.log.Error("could not encode a notification", "session", c.id, "err", err)
				continue
			}
			c.writeLine(b)
		}
	}
}

// ask sends the client a request and waits for its answer or ctx.
func (c *connSession) ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	reply := make(chan connReply, 1)
	c.pmu.Lock()
	c.pending[id] = reply
	c.pmu.Unlock()
	defer func() {
		c.pmu.Lock()
		delete(c.pending, id)
		c.pmu.Unlock()
	}()
	req := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", method, err)
	}
	c.writeLine(b)
	select {
	case <-ctx.Done():
		// The client may be showing its user the question: tell it the
		// question is withdrawn.
		if n, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": mcp.MethodNotificationCancelled,
			"params": map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()}}); err == nil {
			c.writeLine(n)
		}
		return nil, ctx.Err()
	case <-c.gone:
		return nil, fmt.Errorf("the client disconnected before it answered %s", method)
	case r := <-reply:
		return r.result, r.err
	}
}

// answer hands a client's response to the question waiting for it; an
// answer nobody waits for (late, or never asked) is dropped.
func (c *connSession) answer(rawID, result json.RawMessage, rpcErr *struct {
	Message string `json:"message"`
}) {
	var id int64
	if json.Unmarshal(rawID, &id) != nil {
		return
	}
	c.pmu.Lock()
	reply, ok := c.pending[id]
	c.pmu.Unlock()
	if !ok {
		return
	}
	r := connReply{result: result}
	if rpcErr != nil {
		r = connReply{err: fmt.Errorf("the client answered with an error: %s", rpcErr.Message)}
	}
	select {
	case reply <- r:
	default:
	}
}

// RequestSampling asks this connection's client for a completion.
func (c *connSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, err := c.ask(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams)
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("malformed sampling result: %w", err)
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("malformed sampling result content: %w", err)
	}
	res.Content = content
	return &res, nil
}

// RequestElicitation asks this connection's client to elicit input.
func (c *connSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := c.ask(ctx, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("malformed elicitation result: %w", err)
	}
	return &res, nil
}

// ListRoots asks this connection's client for its roots.
func (c *connSession) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := c.ask(ctx, string(mcp.MethodListRoots), nil)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("malformed roots/list result: %w", err)
	}
	return &res, nil
}
