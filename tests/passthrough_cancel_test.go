//go:build e2e

package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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
// start with each of want, in order, for two minutes at most.
func waitEvents(t *testing.T, state, what string, want ...string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		i := 0
		log := events(state)
		for _, line := range strings.Split(log, "\n") {
			if i < len(want) && strings.HasPrefix(line, want[i]) {
				i++
			}
		}
		if i == len(want) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("never: %s\nevents.log:\n%s", what, log)
		case <-deadline:
			t.Fatalf("not within 2 minutes: %s\nevents.log:\n%s", what, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
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
	// The backend serves requests concurrently: its subscribe handler may
	// see the cancellation after it read kiln's unsubscribe.
	waitEvents(t, state, "the backend was told to stop and then unsubscribed",
		"subscribe fault://slow-sub", "cancel-notification id=kiln-sub-", "unsubscribe fault://slow-sub")
	waitEvents(t, state, "the backend's subscribe saw the cancellation", "cancelled subscribe fault://slow-sub")

	s.send(request(`"sub-2"`, "resources/subscribe", `{"uri":"fault://slow-sub"}`))
	waitEvents(t, state, "a second subscribe is forwarded, not taken as already done",
		"subscribe fault://slow-sub", "unsubscribe fault://slow-sub", "subscribe fault://slow-sub")
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub-2"}}`)
	waitEvents(t, state, "the second one is canceled too",
		"subscribe fault://slow-sub", "unsubscribe fault://slow-sub", "subscribe fault://slow-sub",
		"cancel-notification id=kiln-sub-", "unsubscribe fault://slow-sub")
	waitEvents(t, state, "the backend's second subscribe saw the cancellation",
		"cancelled subscribe fault://slow-sub", "cancelled subscribe fault://slow-sub")
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
		"subscribe fault://slow-sub", "cancel-notification id=kiln-sub-", "unsubscribe fault://slow-sub")
	waitEvents(t, state, "the backend's subscribe saw the cancellation", "cancelled subscribe fault://slow-sub")
}
