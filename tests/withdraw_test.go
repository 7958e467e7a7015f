//go:build e2e

package tests

import (
	"context"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestOwnSessionQuestionIsWithdrawn: a 2025-11-25 client on kiln connect
// gets a backend session of its own with the go-sdk conformance server
// (whose shared session is on 2026-07-28); the backend elicits during the
// client's call, and the client cancels the call. The backend stops
// waiting, so kiln must withdraw the question from the client
// (notifications/cancelled for it), as it does for a question on a shared
// session, instead of leaving the client asking its user for up to ten
// minutes.
func TestOwnSessionQuestionIsWithdrawn(t *testing.T) {
	e := newDaemonEnv(t)
	e.cfg = legacyConfig(t, "")
	a := &asker{name: "ada", gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	cancelled := make(chan mcpgo.JSONRPCNotification, 8)
	//lint:ignore SA1019 kiln sends requests on the connection to clients before 2026-07-28 only
	c := e.clientWith([]mcpclient.ClientOption{mcpclient.WithElicitationHandler(a), mcpclient.WithLegacyProtocolOnly()})
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationCancelled) {
			cancelled <- n
		}
	})
	waitTool(t, c, "conf.test_elicitation")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain",
			Arguments: map[string]any{"code": `{"tool": "conf.test_elicitation", "arguments": {"message": "your name?"}}`}}})
		done <- err
	}()
	select {
	case <-a.arrived:
	case err := <-done:
		t.Fatalf("the call ended before the client was asked: %v", err)
	}
	cancel()
	<-done
	eventually(t, "the client is told the question is withdrawn", func() bool { return len(cancelled) > 0 })
}
