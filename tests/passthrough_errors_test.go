//go:build e2e

package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kilnmcp/kiln/runtime/route"
)

// passthroughFaultConfig writes a kiln config whose only backend is the
// fault server in passthrough mode (tests/faultserver/passthrough.go),
// named fp, with env added to its environment.
func passthroughFaultConfig(t *testing.T, env string) string {
	t.Helper()
	return backendsConfig(t, fmt.Sprintf(`  fp:
    command: %s
    env: {FAULT_PASSTHROUGH: "1"%s}
`, faultBin(t), env))
}

// backendsConfig writes a kiln config with its own state directory and the
// backends block given (YAML indented under backends:).
func backendsConfig(t *testing.T, backends string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 10s
backends:
%s`, t.TempDir(), backends)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rpcError is a JSON-RPC error as a client reads it off the wire.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// TestPassthroughBackendErrorsOverStdio: a stdio client gets a stdio
// backend's own JSON-RPC error for prompts/get and resources/read (code,
// message and data), not mcp-go's -32603 with the code folded into text.
// The backend speaks 2026-07-28, where a missing resource is -32602; the
// client, at 2025-06-18, gets its era's -32002.
func TestPassthroughBackendErrorsOverStdio(t *testing.T) {
	s := startRawStdio(t, "--config", passthroughFaultConfig(t, ""))
	s.send(request("0", "initialize", initializeParams))
	s.await("0")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ask := func(method, params string) (json.RawMessage, *rpcError) {
		s.next++
		id := fmt.Sprintf(`"e-%d"`, s.next)
		s.send(request(id, method, params))
		for line := range s.lines {
			var r struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *rpcError       `json:"error"`
			}
			if json.Unmarshal(line, &r) == nil && string(r.ID) == id {
				return r.Result, r.Error
			}
		}
		t.Fatal("kiln closed stdout")
		return nil, nil
	}
	eventually(t, "the backend's prompt is served", func() bool {
		res, e := ask("prompts/get", `{"name":"fp__greet","arguments":{"name":"ada"}}`)
		return e == nil && strings.Contains(string(res), "hello ada")
	})
	_, e := ask("prompts/get", `{"name":"fp__greet","arguments":{"name":"nobody"}}`)
	if e == nil || e.Code != -32602 || e.Message != `greet: no one is called "nobody"` || string(e.Data) != `{"argument":"name"}` {
		t.Errorf("prompts/get the backend refuses: got %+v (data %s); want the backend's -32602, message and data", e, dataOf(e))
	}
	_, e = ask("resources/read", `{"uri":"fault://missing"}`)
	if e == nil || e.Code != -32002 || !strings.Contains(string(e.Data), `"uri":"fault://missing"`) {
		t.Errorf("resources/read the backend cannot find: got %+v (data %s); want the backend's -32002 with the URI", e, dataOf(e))
	}
	if res, e := ask("resources/read", `{"uri":"fault://doc"}`); e != nil || !strings.Contains(string(res), "a fault document") {
		t.Errorf("resources/read of a resource the backend has: %s, %+v", res, e)
	}
}

func dataOf(e *rpcError) string {
	if e == nil {
		return "none"
	}
	return string(e.Data)
}

// TestPassthroughBackendErrorsOverHTTP: the same over streamable HTTP, for
// a client before 2026-07-28 (mcp-go at 2025-11-25) and for the go-sdk
// client (2026-07-28), from a backend at 2025-11-25.
func TestPassthroughBackendErrorsOverHTTP(t *testing.T) {
	url := startHTTP(t, "--config", passthroughFaultConfig(t, `, FAULT_LEGACY: "1"`))
	legacy := legacyHTTP(t, url, func(mcpgo.JSONRPCNotification) {})
	eventually(t, "the backend's prompt is served", func() bool {
		_, err := legacy.GetPrompt(t.Context(), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "fp__greet", Arguments: map[string]string{"name": "ada"}}})
		return err == nil
	})
	_, err := legacy.GetPrompt(t.Context(), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "fp__greet", Arguments: map[string]string{"name": "nobody"}}})
	if !errors.Is(err, mcpgo.ErrInvalidParams) || !strings.Contains(fmt.Sprint(err), "no one is called") {
		t.Errorf("2025-11-25 prompts/get the backend refuses: %v; want the backend's -32602 and message", err)
	}
	_, err = legacy.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "fault://missing"}})
	if !errors.Is(err, mcpgo.ErrResourceNotFound) {
		t.Errorf("2025-11-25 resources/read the backend cannot find: %v; want the backend's -32002", err)
	}

	c := sdk.NewClient(&sdk.Implementation{Name: "kiln-e2e-sdk", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "fp__greet", Arguments: map[string]string{"name": "nobody"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32602 || string(we.Data) != `{"argument":"name"}` {
		t.Errorf("go-sdk prompts/get the backend refuses: %v (%+v); want the backend's -32602 with its data", err, we)
	}
	// The go-sdk client reports the error of a 400 answer without its
	// code: its message is what is left to check.
	_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "fault://missing"})
	if err == nil || !strings.Contains(err.Error(), "Resource not found") || strings.Contains(err.Error(), `backend "fp"`) {
		t.Errorf("go-sdk resources/read the backend cannot find: %v; want the backend's own error", err)
	}
}

// TestHugeResourceTemplate: a backend lists a resource template with 1,002
// variables in one expression, which RFC 6570 allows and Go's regexp
// cannot match by. kiln hides it, says why in its log, answers a read by it
// as a resource not found, and goes on serving the other backend's
// resources. Before, routing a URI against it panicked on the goroutine
// that syncs the backends' resources, which ended kiln as soon as a later
// backend listed a URI; and the SDK, given the template, panicked on every
// templated read while holding its resources lock.
func TestHugeResourceTemplate(t *testing.T) {
	path := backendsConfig(t, fmt.Sprintf(`  a:
    command: %[1]s
    env: {FAULT_HUGE_TEMPLATE: "1"}
  fp:
    command: %[1]s
    env: {FAULT_PASSTHROUGH: "1"}
`, faultBin(t)))
	logs := &syncBuffer{}
	s := startRawStdioLog(t, logs, "--config", path)
	s.call(request("0", "initialize", initializeParams), "0")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ask := func(method, params string) rpcReply {
		s.next++
		id := fmt.Sprintf(`"h-%d"`, s.next)
		return s.call(request(id, method, params), id)
	}
	eventually(t, "fp's resources are listed", func() bool {
		return strings.Contains(string(ask("resources/list", `{}`).Result), "fault://doc")
	})
	// Both backends have synced once the log reports a's template.
	eventually(t, "kiln's log says why the template is hidden", func() bool {
		return strings.Contains(logs.String(), "fault-huge://{v0,") && strings.Contains(logs.String(), route.ErrNoMatcher.Error())
	})
	if templates := ask("resources/templates/list", `{}`); strings.Contains(string(templates.Result), "fault-huge://") {
		t.Errorf("the template kiln cannot match by is listed: %.300s", templates.Result)
	}
	for range 3 {
		if r := ask("resources/read", `{"uri":"fault-huge://x"}`); r.Error == nil || r.Error.Code != -32002 {
			t.Errorf("a read by the hidden template: %+v %s; want resource not found (-32002)", r.Error, r.Result)
		}
		if r := ask("resources/read", `{"uri":"fault://doc"}`); r.Error != nil || !strings.Contains(string(r.Result), "a fault document") {
			t.Fatalf("read of a listed resource: %+v %s", r.Error, r.Result)
		}
	}
	s.listTools()
}

// syncBuffer collects a process's log for a test to read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
