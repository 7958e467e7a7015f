package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// stderrRingBytes bounds the stderr kept per backend: enough for a stack
// trace, small enough for hundreds of backends.
const stderrRingBytes = 64 << 10

// Options tune a connection. The zero value is usable.
type Options struct {
	// ClientName and ClientVersion identify kiln to the backend.
	ClientName, ClientVersion string
	// OnNotification receives every notification the backend sends
	// (list_changed, progress, logging) with its raw params.
	OnNotification func(method string, params json.RawMessage)
}

// Conn is a live, initialized session with one backend. It is safe for
// concurrent use.
type Conn struct {
	name      string
	transport string
	client    *client.Client
	stderr    *ring
	proc      *exec.Cmd
	server    mcp.Implementation
	protocol  string
	instr     string
	caps      mcp.ServerCapabilities

	closeOnce sync.Once
	closeErr  error
}

// Dial starts or connects to the backend and completes the MCP handshake
// (server/discover, falling back to initialize). ctx bounds only the
// handshake; the connection lives until Close.
func Dial(ctx context.Context, cfg *config.Backend, opts Options) (*Conn, error) {
	c := &Conn{name: cfg.Name, transport: cfg.Transport, stderr: newRing(stderrRingBytes)}
	t, err := newTransport(cfg, c.stderr, &c.proc)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", cfg.Name, err)
	}
	c.client = client.NewClient(t)
	if opts.OnNotification != nil {
		c.client.OnNotification(func(n mcp.JSONRPCNotification) {
			raw, _ := json.Marshal(n.Params)
			opts.OnNotification(n.Method, raw)
		})
	}
	// The transport keeps the start context for its lifetime, so it must
	// not be the caller's (possibly short) handshake context.
	if err := c.client.Start(context.WithoutCancel(ctx)); err != nil {
		c.Close()
		return nil, c.wrap("start", err)
	}
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
	return c, nil
}

// Name is the backend's configured name.
func (c *Conn) Name() string { return c.name }

// ProtocolVersion is the MCP version negotiated with the backend.
func (c *Conn) ProtocolVersion() string { return c.protocol }

// StderrTail returns the last n non-empty lines the backend wrote to stderr
// (stdio backends only).
func (c *Conn) StderrTail(n int) string { return c.stderr.tail(n) }

// wrap adds the backend name and, when there is any, its stderr tail: the
// line that explains a failure is usually there.
func (c *Conn) wrap(op string, err error) error {
	if tail := c.stderr.tail(5); tail != "" {
		return fmt.Errorf("backend %q: %s: %w\n  last stderr lines:\n    %s", c.name, op, err, indent(tail))
	}
	return fmt.Errorf("backend %q: %s: %w", c.name, op, err)
}

// CallTool calls one tool and returns the backend's result as sent. A
// returned error means the call itself failed (transport, protocol,
// deadline); a tool-level failure is a Result with IsError set.
func (c *Conn) CallTool(ctx context.Context, tool string, args json.RawMessage) (*toolcall.Result, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodToolsCall))
	res, err := c.client.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("backend %q: call %q: %w", c.name, tool, err)
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

// Close ends the session. For stdio backends it also stops the whole
// process group, so helper processes a server spawned do not linger.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if c.client != nil {
			c.closeErr = c.client.Close()
		}
		if c.proc != nil && c.proc.Process != nil {
			// The SDK already closed stdin and signalled the leader; the
			// group kill reaps anything it left behind. ESRCH means the
			// group is already gone.
			_ = syscall.Kill(-c.proc.Process.Pid, syscall.SIGKILL)
		}
	})
	return c.closeErr
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
