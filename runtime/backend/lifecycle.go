package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// ErrGone marks a call that failed because the backend's process exited or
// its connection was lost.
var ErrGone = errors.New("backend connection lost")

// Done is closed when the session ends on its own: a stdio process exited
// or an SSE stream was lost. Streamable HTTP has no standing connection;
// health probes find a dead server there.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Exit says why Done was closed, with the last stderr lines; nil while the
// session is up.
func (c *Conn) Exit() error {
	select {
	case <-c.done:
		return c.exit
	default:
		return nil
	}
}

// gone reports why the session ended when err comes from its end. The SDK
// notices a closed pipe a moment before the process is reaped, so a
// transport-closed error waits briefly for the exit.
func (c *Conn) gone(err error) error {
	if errors.Is(err, transport.ErrTransportClosed) {
		select {
		case <-c.done:
		case <-time.After(time.Second):
			return fmt.Errorf("transport closed")
		}
	}
	return c.Exit()
}

func (c *Conn) end(err error) {
	c.doneOnce.Do(func() {
		c.exit = err
		close(c.done)
	})
}

// watch starts the goroutine that closes done when the session ends.
func (c *Conn) watch() {
	if c.proc != nil && c.proc.Process != nil {
		pid := c.proc.Process.Pid
		go func() {
			// WNOWAIT leaves the zombie for the SDK's own Wait, so the
			// two never race to reap it.
			var info unix.Siginfo
			for {
				err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
				if !errors.Is(err, unix.EINTR) {
					break
				}
			}
			// The exit can be seen before the stderr copy has the last
			// lines the process wrote (often the reason it died); wait a
			// moment for the pipe to close. A child that inherited the
			// pipe may keep it open, hence the bound.
			select {
			case <-c.stderr.drained:
			case <-time.After(250 * time.Millisecond):
			}
			c.end(fmt.Errorf("process %d exited", pid))
		}()
		return
	}
	c.client.OnConnectionLost(func(err error) {
		c.end(fmt.Errorf("connection lost: %w", err))
	})
}

// listen subscribes to the backend's list_changed notifications and the
// resources kiln watches on protocol versions that deliver them only to a
// subscriptions/listen stream (2026-07-28 on); earlier versions send them
// unasked. The stream is reopened with backoff if the backend ends it
// while the session lives, and at once when the watched resources change.
func (c *Conn) listen() {
	if c.protocol < statelessProtocol {
		return
	}
	var base mcp.SubscriptionFilter
	base.ToolsListChanged = c.caps.Tools != nil && c.caps.Tools.ListChanged
	base.PromptsListChanged = c.caps.Prompts != nil && c.caps.Prompts.ListChanged
	base.ResourcesListChanged = c.caps.Resources != nil && c.caps.Resources.ListChanged
	ctx, cancel := context.WithCancel(context.Background())
	c.stopListen = cancel
	changed := c.watched.signal()
	go func() {
		for wait := time.Second; ctx.Err() == nil; {
			f := base
			f.ResourceSubscriptions = c.watched.uris()
			if f.IsEmpty() {
				select {
				case <-ctx.Done():
				case <-c.done:
					return
				case <-changed:
				}
				continue
			}
			sctx, stop := context.WithCancel(ctx)
			go func() {
				select {
				case <-changed:
					c.watched.restart.Store(true)
					stop()
				case <-sctx.Done():
				}
			}()
			_ = c.client.Listen(sctx, f)
			stop()
			if c.watched.restart.Swap(false) {
				continue // reopen with the new filter at once
			}
			select {
			case <-ctx.Done():
			case <-c.done:
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
		}
	}()
}

// legacyProtocol is the newest version with the initialize handshake.
const legacyProtocol = "2025-11-25"

// statelessProtocol is the first MCP version without ping; a probe there
// lists tools instead.
const statelessProtocol = "2026-07-28"

// Probe checks that the backend answers: a ping, or on stateless protocol
// versions, which drop ping, the first page of tools/list.
func (c *Conn) Probe(ctx context.Context) error {
	if c.protocol >= statelessProtocol {
		_, err := c.client.ListToolsByPage(ctx, mcp.ListToolsRequest{})
		return err
	}
	//lint:ignore SA1019 ping is deprecated only from 2026-07-28, which takes the branch above
	return c.client.Ping(ctx)
}

// ListTools returns the backend's current tools as it publishes them.
func (c *Conn) ListTools(ctx context.Context) ([]manifest.Tool, error) {
	return c.listTools(ctx)
}
