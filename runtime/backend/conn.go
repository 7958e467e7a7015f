package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// stderrRingBytes bounds the stderr kept per backend: enough for a stack
// trace, small enough for hundreds of backends.
const stderrRingBytes = 64 << 10

// Options tune a connection. The zero value is usable.
type Options struct {
	// ClientName and ClientVersion identify kiln to the backend.
	ClientName, ClientVersion string
	// Log gets what goes wrong handling the backend's messages on the
	// SDK's goroutines (a recovered panic); nil is slog's default.
	Log *slog.Logger
	// OnNotification receives every notification the backend sends
	// (list_changed, progress, logging) with its raw params.
	OnNotification func(method string, params json.RawMessage)
	// OnRequest answers the backend's requests to the client
	// (sampling/createMessage, elicitation/create, roots/list) that come
	// without a call's Requester in their context. When set, kiln offers
	// the backend those client capabilities; when nil it offers none.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Guard, when set, checks every address an HTTP or SSE backend's
	// connections reach; kiln sets it for backends registered at run time.
	Guard *Guard
	// HTTPClient, when set, carries an HTTP or SSE backend's requests
	// (runtime/oauth's client adds and renews bearer tokens).
	HTTPClient *http.Client
	// Elicit, when set, answers the backend's elicitation requests (and
	// declares the capability); without it they are refused.
	Elicit ElicitFunc
	// Listen keeps a GET stream open to an HTTP backend before protocol
	// 2026-07-28, for server requests not tied to a call (an elicitation
	// a tool does not relate to its request goes there).
	Listen bool
	// Legacy negotiates the last revision before 2026-07-28 (the
	// initialize handshake) even with a backend that speaks 2026-07-28: a
	// backend sends requests in-band during a call only on such a session,
	// and kiln needs one for callers of that era.
	Legacy bool
}

// Conn is a live, initialized session with one backend. It is safe for
// concurrent use.
type Conn struct {
	name      string
	transport string
	client    *client.Client
	stderr    *ring
	proc      *exec.Cmd
	// pipe carries a stdio backend's process and raw calls; nil for
	// other transports.
	pipe *stdioPipe
	http *http.Client // the guarded client, whose idle connections Close drops
	// sessions is told when a client session ends (a workspace kills the
	// background shells it started); nil for other transports.
	sessions interface{ EndSession(id string) }
	server   mcp.Implementation
	protocol string
	instr    string
	caps     mcp.ServerCapabilities

	// done is closed when the session ends on its own: the process exited
	// or the SSE stream was lost. exit says how.
	done     chan struct{}
	doneOnce sync.Once
	exit     error

	// stopListen ends the subscriptions/listen stream of a 2026-07-28
	// session.
	stopListen context.CancelFunc
	// watch holds the resources kiln subscribed to on a 2026-07-28
	// session, which travel in the listen stream's filter.
	watched watchSet

	closeOnce sync.Once
	closeErr  error
}

// Dial starts or connects to the backend and completes the MCP handshake
// (server/discover, falling back to initialize). ctx bounds only the
// handshake; the connection lives until Close.
//
// Some HTTP servers (go-sdk v1.8.0 when stateful) answer server/discover
// with 2026-07-28 and then refuse every request at that version. Dial
// checks a modern HTTP session with one request and, on that refusal,
// connects again with the initialize handshake.
func Dial(ctx context.Context, cfg *config.Backend, opts Options) (*Conn, error) {
	c, err := dialOnce(ctx, cfg, opts, opts.Legacy)
	if err != nil || c.protocol < statelessProtocol || cfg.Transport == config.TransportStdio {
		return c, err
	}
	if perr := c.Probe(ctx); perr == nil || !strings.Contains(perr.Error(), "unsupported protocol version") {
		return c, nil
	}
	c.Close()
	return dialOnce(ctx, cfg, opts, true)
}

func dialOnce(ctx context.Context, cfg *config.Backend, opts Options, legacy bool) (*Conn, error) {
	c := &Conn{name: cfg.Name, transport: cfg.Transport, stderr: newRing(stderrRingBytes), done: make(chan struct{})}
	// A guarded backend (registered at run time) never gets an OAuth
	// client: the catalog refuses auth on registrations, so the guard is
	// the only way out.
	switch {
	case opts.Guard != nil && cfg.Transport != config.TransportStdio:
		c.http = opts.Guard.Client()
	case opts.HTTPClient != nil:
		c.http = opts.HTTPClient
	}
	t, err := newTransport(cfg, c.http, opts.Listen, c.stderr, &c.pipe)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", cfg.Name, err)
	}
	if wt, ok := t.(*workspaceTransport); ok {
		c.sessions = wt.ws
	}
	if c.pipe != nil {
		c.pipe.log = opts.Log // before Start, which starts the reader
	}
	copts := clientOptions(opts, cfg.Name)
	if legacy {
		copts = append(copts, client.WithProtocolVersion(legacyProtocol))
	}
	if opts.HTTPClient != nil && cfg.Transport != config.TransportStdio {
		// The probe's request may carry a whole OAuth login (a person at
		// a browser in kiln auth login): mcp-go's 5 s probe timeout would
		// abandon it and fall back to initialize, which asks again and
		// fails on the first flow's state. ctx still bounds the handshake.
		copts = append(copts, client.WithDiscoverTimeout(-1))
	}
	if opts.Elicit != nil {
		copts = append(copts, client.WithElicitationHandler(elicitor{opts.Elicit}))
	}
	c.client = client.NewClient(t, copts...)
	if opts.OnNotification != nil {
		c.client.OnNotification(func(n mcp.JSONRPCNotification) {
			// The SDK's reader calls this inline for a stdio or SSE
			// backend: a panic here would end kiln, not one message. The
			// message is built only then: notifications (progress, logs)
			// are frequent.
			defer func() {
				if p := recover(); p != nil {
					safe.Report(opts.Log, "handling backend "+cfg.Name+"'s "+n.Method, p)
				}
			}()
			raw, _ := json.Marshal(n.Params)
			opts.OnNotification(n.Method, raw)
		})
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("backend %q: %w", cfg.Name, err)
	}
	if cfg.Transport != config.TransportStdio {
		// An HTTP server that accepts and never answers would hold Start
		// past the handshake deadline (the SSE GET has none of its own):
		// closing the transport when ctx ends unblocks it.
		stop := context.AfterFunc(ctx, func() { _ = t.Close() })
		defer stop()
	}
	// The transport keeps the start context for its lifetime, so it must
	// not be the caller's (possibly short) handshake context.
	err = c.client.Start(context.WithoutCancel(ctx))
	if c.pipe != nil {
		c.proc = c.pipe.cmd
	}
	if err != nil {
		c.Close()
		return nil, c.wrap("start", err)
	}
	c.watch()
	name := opts.ClientName
	if name == "" {
		name = "kiln"
	}
	init, err := c.client.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: name, Version: opts.ClientVersion},
	}})
	if err != nil {
		c.Close()
		return nil, c.wrap("initialize", err)
	}
	c.server = init.ServerInfo
	c.protocol = c.client.ProtocolVersion()
	if c.protocol == "" {
		c.protocol = init.ProtocolVersion
	}
	c.instr = init.Instructions
	c.caps = init.Capabilities
	if c.caps.Logging != nil && c.protocol < statelessProtocol {
		// Before 2026-07-28 a server logs only once a level is set; kiln
		// forwards what a backend logs during a call to its caller.
		//lint:ignore SA1019 deprecated only from 2026-07-28, which this branch excludes
		_ = c.client.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}})
	}
	c.listen()
	return c, nil
}

// Name is the backend's configured name.
func (c *Conn) Name() string { return c.name }

// ProtocolVersion is the MCP version negotiated with the backend.
func (c *Conn) ProtocolVersion() string { return c.protocol }

// Stateless reports whether the session negotiated 2026-07-28 or later,
// where the backend asks the client only through input-required results.
func (c *Conn) Stateless() bool { return c.protocol >= statelessProtocol }

// StderrTail returns the last n non-empty lines the backend wrote to stderr
// (stdio backends only).
func (c *Conn) StderrTail(n int) string { return c.stderr.tail(n) }

// wrap adds the backend name and, when there is any, its stderr tail: the
// line that explains a failure is usually there.
func (c *Conn) wrap(op string, err error) error {
	return c.WithStderr(fmt.Errorf("backend %q: %s: %w", c.name, op, err), 5)
}

// WithStderr appends the last n lines the backend wrote to stderr to err,
// where the reason a process died usually is.
func (c *Conn) WithStderr(err error, n int) error {
	if tail := c.stderr.tail(n); tail != "" {
		return fmt.Errorf("%w\n  last stderr lines:\n    %s", err, indent(tail))
	}
	return err
}

// CallOptions say who listens to a call's notifications.
type CallOptions struct {
	// ProgressToken, when set, asks the backend for progress
	// notifications, which arrive through Options.OnNotification.
	ProgressToken any
	// Logs asks for the call's log messages where the protocol ties the
	// log level to the request (2026-07-28); earlier sessions get a level
	// once, at connect.
	Logs bool
	// LogLevel is the least severe level Logs asks for; "" means info.
	LogLevel string
}

// CallTool calls one tool and returns the backend's result as sent. A
// returned error means the call itself failed (transport, protocol,
// deadline); a tool-level failure is a Result with IsError set. When ctx
// ends first the backend is told: notifications/cancelled, and on HTTP the
// request is aborted too.
func (c *Conn) CallTool(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*toolcall.Result, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if c.Stateless() {
		if r := takeRound(ctx); r != nil {
			return c.callRound(ctx, tool, args, opts, r)
		}
	}
	if c.rawPath() {
		return c.callRaw(ctx, tool, args, opts)
	}
	return c.callSDK(ctx, tool, args, opts)
}

// callSDK is CallTool through the SDK client, which answers a
// 2026-07-28 backend's input-required rounds.
func (c *Conn) callSDK(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*toolcall.Result, error) {
	ctx, capture := withCapture(ctx, string(mcp.MethodToolsCall))
	params := mcp.CallToolParams{Name: tool, Arguments: args}
	if opts.ProgressToken != nil {
		params.Meta = &mcp.Meta{ProgressToken: opts.ProgressToken}
	}
	if opts.Logs && c.protocol >= statelessProtocol && c.caps.Logging != nil {
		if params.Meta == nil {
			params.Meta = &mcp.Meta{}
		}
		level := opts.LogLevel
		if level == "" {
			level = string(mcp.LoggingLevelInfo)
		}
		params.Meta.AdditionalFields = map[string]any{mcp.MetaKeyLogLevel: level}
	}
	for k, v := range propagation(ctx) {
		if params.Meta == nil {
			params.Meta = &mcp.Meta{}
		}
		if params.Meta.AdditionalFields == nil {
			params.Meta.AdditionalFields = map[string]any{}
		}
		params.Meta.AdditionalFields[k] = v
	}
	res, err := c.client.CallTool(ctx, mcp.CallToolRequest{Params: params})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
		}
		if exit := c.gone(err); exit != nil {
			return nil, c.wrap(fmt.Sprintf("call %q", tool), fmt.Errorf("%w: %v", ErrGone, exit))
		}
		return nil, c.wrap(fmt.Sprintf("call %q", tool), err)
	}
	out := &toolcall.Result{}
	raw := json.RawMessage(nil)
	if n := len(capture.pages); n > 0 {
		raw = capture.pages[n-1]
	} else if raw, err = json.Marshal(res); err != nil {
		return nil, fmt.Errorf("backend %q: call %q: encode result: %w", c.name, tool, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("backend %q: call %q: malformed result: %w", c.name, tool, err)
	}
	if out.Content == nil {
		out.Content = []json.RawMessage{}
	}
	return out, nil
}

// Close ends the session. A stdio backend gets SIGTERM (its whole process
// group, so helpers it spawned stop too) while its stdin closes, and
// SIGKILL if it is still there after StopGrace.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if c.stopListen != nil {
			c.stopListen()
		}
		pid := 0
		if c.proc != nil && c.proc.Process != nil {
			pid = c.proc.Process.Pid
			_ = syscall.Kill(-pid, syscall.SIGTERM)
		}
		closed := make(chan error, 1)
		go func() {
			if c.client != nil {
				closed <- c.client.Close()
				return
			}
			closed <- nil
		}()
		if pid == 0 {
			c.closeErr = <-closed
			if c.http != nil {
				c.http.CloseIdleConnections()
			}
			return
		}
		select {
		case <-c.done:
		case <-time.After(StopGrace):
		}
		// ESRCH means the group is already gone.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case err := <-closed:
			c.closeErr = ignoreExit(err)
			// The watcher sees the reaped process at once; wait for it so
			// Done is closed when Close returns.
			select {
			case <-c.done:
			case <-time.After(time.Second):
			}
		case <-time.After(StopGrace):
			c.closeErr = fmt.Errorf("backend %q: process %d did not exit after SIGKILL", c.name, pid)
		}
	})
	return c.closeErr
}

// StopGrace is how long a stdio backend has to exit after SIGTERM.
const StopGrace = 5 * time.Second

// ignoreExit drops the SDK's report of how a process we stopped exited:
// being killed is the expected outcome of Close.
func ignoreExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

func indent(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, s[i])
		if s[i] == '\n' {
			out = append(out, "    "...)
		}
	}
	return string(out)
}

// DialTimeout is Dial bounded by d, for callers that have no deadline.
func DialTimeout(ctx context.Context, cfg *config.Backend, d time.Duration, opts Options) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return Dial(ctx, cfg, opts)
}

// EndSession tells the backend that a client session ended, for backends
// that keep something per session (a workspace's background shells).
func (c *Conn) EndSession(id string) {
	if c.sessions != nil {
		c.sessions.EndSession(id)
	}
}
