//go:build e2e

package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	cfg := fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  connect_timeout: 10s
backends:
  fp:
    command: %s
    env: {FAULT_PASSTHROUGH: "1"%s}
`, t.TempDir(), faultBin(t), env)
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
	k := startFaultKiln(t, fmt.Sprintf(`  a:
    command: %[1]s
    env: {FAULT_HUGE_TEMPLATE: "1"}
  fp:
    command: %[1]s
    env: {FAULT_PASSTHROUGH: "1"}
`, faultBin(t)))
	ctx := t.Context()
	// Both backends have synced once fp's resource is listed and the log
	// reports a's template.
	eventually(t, "fp's resources are listed and a's template reported", func() bool {
		res, err := k.c.ListResources(ctx, mcpgo.ListResourcesRequest{})
		return err == nil && strings.Contains(fmt.Sprint(res.Resources), "fault://doc") &&
			k.logged("fault-huge://{v0,") && k.logged(route.ErrNoMatcher.Error())
	})
	tpls, err := k.c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range tpls.ResourceTemplates {
		if strings.HasPrefix(tpl.URITemplate.Raw(), "fault-huge://") {
			t.Errorf("the template kiln cannot match by is listed: %.100s", tpl.URITemplate.Raw())
		}
	}
	// A resource not found is -32602 from 2026-07-28 on, -32002 before.
	notFound := mcpgo.ErrResourceNotFound
	if k.c.ProtocolVersion() >= "2026-07-28" {
		notFound = mcpgo.ErrInvalidParams
	}
	for range 3 {
		_, err := k.c.ReadResource(ctx, mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "fault-huge://x"}})
		if !errors.Is(err, notFound) || !strings.Contains(fmt.Sprint(err), "resource not found") {
			t.Errorf("a read by the hidden template (protocol %s): %v; want resource not found", k.c.ProtocolVersion(), err)
		}
		if got := k.resource("fault://doc"); !strings.Contains(got, "a fault document") {
			t.Fatalf("read of a listed resource: %q", got)
		}
	}
	// The backend that lists the template serves its tools as ever.
	if r := k.chain(ctx, `{"tool":"a.echo","arguments":{"text":"still here"}}`); r.IsError || !strings.Contains(r.Text(), "still here") {
		t.Errorf("a.echo: %+v", r)
	}
}
