//go:build e2e

package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// slowSubConfig is passthroughFaultConfig with the fault server at
// 2025-11-25 (where resources/subscribe is a request) keeping its events
// in the returned folder.
func slowSubConfig(t *testing.T) (cfg, state string) {
	state = t.TempDir()
	return passthroughFaultConfig(t, `, FAULT_LEGACY: "1", FAULT_STATE_DIR: "`+state+`"`), state
}

// waitEvents waits until the fault server's events.log holds lines that
// start with each of want, in order.
func waitEvents(t *testing.T, state, what string, want ...string) {
	t.Helper()
	eventually(t, what, func() bool {
		i := 0
		for _, line := range strings.Split(events(state), "\n") {
			if i < len(want) && strings.HasPrefix(line, want[i]) {
				i++
			}
		}
		return i == len(want)
	})
}

// TestCanceledSubscribeIsCanceledUpstream: a stdio client cancels its
// resources/subscribe while kiln's subscribe at the backend is in flight;
// the backend is told (notifications/cancelled) and, since it may have
// subscribed anyway, kiln unsubscribes there. A later subscription to the
// same URI is forwarded afresh: kiln did not count itself subscribed.
func TestCanceledSubscribeIsCanceledUpstream(t *testing.T) {
	cfg, state := slowSubConfig(t)
	s := startRawStdio(t, "--config", cfg)
	s.send(request("0", "initialize", initializeParams))
	s.await("0")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	eventually(t, "the backend's resources are served", func() bool {
		s.next++
		id := fmt.Sprintf(`"r-%d"`, s.next)
		s.send(request(id, "resources/read", `{"uri":"fault://doc"}`))
		return s.await(id).Error == nil
	})
	s.send(request(`"sub-1"`, "resources/subscribe", `{"uri":"fault://slow-sub"}`))
	waitEvents(t, state, "the subscribe reached the backend", "subscribe fault://slow-sub")
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-1","reason":"changed my mind"}}`)
	waitEvents(t, state, "the backend was told to stop and then unsubscribed",
		"cancel-notification id=kiln-sub-", "cancelled subscribe fault://slow-sub", "unsubscribe fault://slow-sub")

	s.send(request(`"sub-2"`, "resources/subscribe", `{"uri":"fault://slow-sub"}`))
	waitEvents(t, state, "a second subscribe is forwarded, not taken as already done",
		"unsubscribe fault://slow-sub", "subscribe fault://slow-sub")
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-2"}}`)
	waitEvents(t, state, "the second one is canceled too",
		"unsubscribe fault://slow-sub", "subscribe fault://slow-sub", "cancelled subscribe fault://slow-sub", "unsubscribe fault://slow-sub")
}

// TestSubscribeInFlightEndsWithItsSession: an HTTP client session ends
// (DELETE) while its resources/subscribe POST is still open; kiln cancels
// the subscribe at the backend and unsubscribes there.
func TestSubscribeInFlightEndsWithItsSession(t *testing.T) {
	cfg, state := slowSubConfig(t)
	url := startHTTP(t, "--config", cfg)
	tr, err := transport.NewStreamableHTTP(url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	startMCPGo(t, c)
	eventually(t, "the backend's resources are served", func() bool {
		_, err := c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "fault://doc"}})
		return err == nil
	})
	go func() {
		//lint:ignore SA1019 resources/subscribe is the request under test (2025-11-25)
		_ = c.Subscribe(t.Context(), mcpgo.SubscribeRequest{Params: mcpgo.SubscribeParams{URI: "fault://slow-sub"}})
	}()
	waitEvents(t, state, "the subscribe reached the backend", "subscribe fault://slow-sub")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", tr.GetSessionId())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitEvents(t, state, "the backend was told to stop and then unsubscribed",
		"cancel-notification id=kiln-sub-", "cancelled subscribe fault://slow-sub", "unsubscribe fault://slow-sub")
}
