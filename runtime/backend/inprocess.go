package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// workspaceTransport serves a transport: workspace backend inside kiln.
// It answers the few JSON-RPC methods a client sends (initialize, ping,
// tools/list, tools/call) by calling the workspace directly, so the
// workspace is a backend like any other to dispatch, search and the
// sandbox, without an MCP server library in between (layout_test.go keeps
// SDK server types in runtime/server).
type workspaceTransport struct {
	ws *workspace.Workspace

	mu     sync.Mutex
	closed bool
}

func newWorkspaceTransport(cfg *config.Backend) (transport.Interface, error) {
	ws, err := workspace.Open(cfg, nil)
	if err != nil {
		return nil, err
	}
	return &workspaceTransport{ws: ws}, nil
}

func (t *workspaceTransport) Start(context.Context) error { return nil }

func (t *workspaceTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("workspace transport closed")
	}
	var result any
	switch req.Method {
	case string(mcp.MethodInitialize):
		result = map[string]any{
			"protocolVersion": workspace.Protocol,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": workspace.ServerName, "version": workspace.ToolsVersion},
			"instructions":    workspace.Instructions,
		}
	case string(mcp.MethodPing):
		result = map[string]any{}
	case string(mcp.MethodToolsList):
		result = map[string]any{"tools": t.ws.Tools()}
	case string(mcp.MethodToolsCall):
		raw, err := json.Marshal(req.Params)
		if err != nil {
			return errorResponse(req, mcp.INVALID_PARAMS, err.Error()), nil
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return errorResponse(req, mcp.INVALID_PARAMS, "tools/call params: "+err.Error()), nil
		}
		result = t.ws.Call(workspace.WithSession(ctx, requesterSession(ctx)), p.Name, p.Arguments)
	default:
		return errorResponse(req, mcp.METHOD_NOT_FOUND, "method not found: "+req.Method), nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: raw}
	observe(ctx, req, resp) // Conn reads results as sent, like the other transports
	return resp, nil
}

func errorResponse(req transport.JSONRPCRequest, code int, msg string) *transport.JSONRPCResponse {
	return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: &mcp.JSONRPCErrorDetails{Code: code, Message: msg}}
}

// SendNotification drops the client's notifications: initialized needs
// no answer, and a cancelled call already ends through its context.
func (t *workspaceTransport) SendNotification(context.Context, mcp.JSONRPCNotification) error {
	return nil
}

func (t *workspaceTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}

// Close kills the workspace's shells and releases its root.
func (t *workspaceTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	return t.ws.Close()
}

func (t *workspaceTransport) GetSessionId() string { return "" }
