package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/config"
)

// rawKey carries a *rawCapture through a request's context so the transport
// wrapper can hand the undecoded result back to the caller. The SDK decodes
// tool lists and results into structs that drop keys it does not model
// (top-level anyOf or definitions in an inputSchema, unknown content types);
// kiln records and forwards the backend's own bytes instead.
type rawKey struct{}

type rawCapture struct {
	method string
	pages  []json.RawMessage
	// rpcErr is the JSON-RPC error the backend answered with, whose code
	// and data the SDK's error value drops.
	rpcErr *mcp.JSONRPCErrorDetails
}

func withCapture(ctx context.Context, method string) (context.Context, *rawCapture) {
	c := &rawCapture{method: method}
	return context.WithValue(ctx, rawKey{}, c), c
}

func observe(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) {
	c, _ := ctx.Value(rawKey{}).(*rawCapture)
	if c == nil || resp == nil || req.Method != c.method {
		return
	}
	if resp.Error != nil {
		c.rpcErr = resp.Error
		return
	}
	c.pages = append(c.pages, append(json.RawMessage(nil), resp.Result...))
}

// The wrappers embed the concrete SDK transports so that every optional
// interface the client type-asserts (HTTP protocol headers, bidirectional
// requests, stderr) stays visible; only SendRequest is intercepted, and on
// stdio Start and Close, which run the process kiln spawned.
type stdioTransport struct {
	*transport.Stdio
	pipe *stdioPipe
}

func newStdioTransport(cfg *config.Backend, stderr *ring) *stdioTransport {
	p := newStdioPipe(cfg, stderr)
	return &stdioTransport{Stdio: transport.NewIO(p.feed, sdkWriter{p}, nil), pipe: p}
}

func (t *stdioTransport) Start(ctx context.Context) error {
	if err := t.pipe.start(); err != nil {
		return err
	}
	return t.Stdio.Start(ctx)
}

// Close ends the calls still waiting (as mcp-go's Close ends its own),
// closes stdin (mcp-go's Close), then waits for the process, which
// Conn.Close signals.
func (t *stdioTransport) Close() error {
	t.pipe.end()
	err := t.Stdio.Close()
	if werr := t.pipe.close(); werr != nil {
		return werr
	}
	return err
}

func (t *stdioTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Stdio.SendRequest(ctx, req)
	if req.Method == string(mcp.MethodServerDiscover) && err == nil {
		resp = checkDiscover(resp)
	}
	if err == nil {
		observe(ctx, req, resp)
	}
	return resp, err
}

type httpTransport struct{ *transport.StreamableHTTP }

func (t httpTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	if req.Method == string(mcp.MethodServerDiscover) && refusedOwnVersion(resp, err) {
		// SEP-2575: a server that refuses the version it lists as
		// supported gets the same request once more, instead of the SDK
		// falling back to the legacy handshake a modern server rejects.
		resp, err = t.StreamableHTTP.SendRequest(ctx, req)
	}
	if req.Method == string(mcp.MethodServerDiscover) && err == nil {
		resp = checkDiscover(resp)
	}
	if err == nil {
		observe(ctx, req, resp)
	} else if ctx.Err() != nil {
		cancelRemote(ctx, t.StreamableHTTP, req)
	}
	return resp, err
}

type sseTransport struct{ *transport.SSE }

func (t sseTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.SSE.SendRequest(ctx, req)
	if err == nil {
		observe(ctx, req, resp)
	} else if ctx.Err() != nil {
		cancelRemote(ctx, t.SSE, req)
	}
	return resp, err
}

// cancelRemote tells an HTTP backend that kiln gave up on req. The SDK
// only aborts the HTTP request there, which before protocol 2026-07-28 does
// not cancel anything: the spec says a disconnect is not a cancellation and
// asks for notifications/cancelled, which servers such as go-sdk's act on.
// Best effort, off the caller's path.
func cancelRemote(ctx context.Context, t interface {
	SendNotification(context.Context, mcp.JSONRPCNotification) error
}, req transport.JSONRPCRequest) {
	switch req.Method {
	case string(mcp.MethodInitialize), string(mcp.MethodServerDiscover):
		return // the handshake must not be canceled
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": req.ID, "reason": ctx.Err().Error()}},
	}}
	go func() {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = t.SendNotification(nctx, n)
	}()
}

// newTransport builds the SDK transport for a backend. For stdio it returns
// the pipe too, which holds the process once the transport starts (Close
// signals its whole process group) and carries raw calls.
// An HTTP or SSE backend uses hc when it is set (a guarded client, or
// runtime/oauth's), else a default client; an HTTP backend's streams
// resume through resumer.
func newTransport(cfg *config.Backend, hc *http.Client, listen bool, stderr *ring, pipe **stdioPipe) (transport.Interface, error) {
	switch cfg.Transport {
	case config.TransportStdio:
		t := newStdioTransport(cfg, stderr)
		*pipe = t.pipe
		return t, nil
	case config.TransportHTTP:
		// The resumer goes on top, so a resumption GET passes the bearer
		// and address guard layers like any request.
		rc := &http.Client{}
		if hc != nil {
			c := *hc
			rc = &c
		}
		rc.Transport = newResumer(rc.Transport)
		opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(cfg.Headers), transport.WithHTTPHeaderFunc(propagation),
			transport.WithHTTPBasicClient(rc)}
		if listen {
			// Servers may send requests not tied to a call (elicitation
			// from a tool that does not relate it) on the GET stream.
			//lint:ignore SA1019 the GET stream is what pre-2026-07-28 servers use; Options.Listen is for them only
			opts = append(opts, transport.WithContinuousListening())
		}
		t, err := transport.NewStreamableHTTP(cfg.URL, opts...)
		if err != nil {
			return nil, err
		}
		return httpTransport{t}, nil
	case config.TransportSSE:
		opts := []transport.ClientOption{transport.WithHeaders(cfg.Headers), transport.WithHeaderFunc(propagation)}
		if hc != nil {
			opts = append(opts, transport.WithHTTPClient(hc))
		}
		t, err := transport.NewSSE(cfg.URL, opts...)
		if err != nil {
			return nil, err
		}
		return sseTransport{t}, nil
	case config.TransportWorkspace:
		return newWorkspaceTransport(cfg)
	}
	return nil, fmt.Errorf("unknown transport %q", cfg.Transport)
}

// refusedOwnVersion reports a -32022 answer to server/discover whose
// supported list holds the version the request carried.
func refusedOwnVersion(resp *transport.JSONRPCResponse, err error) bool {
	var u mcp.UnsupportedProtocolVersionError
	if errors.As(err, &u) {
		return slices.Contains(u.Supported, u.Version)
	}
	if resp == nil || resp.Error == nil || resp.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return false
	}
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	raw, _ := json.Marshal(resp.Error.Data)
	return json.Unmarshal(raw, &data) == nil && slices.Contains(data.Supported, data.Requested)
}

// checkDiscover turns a server/discover result that lists no stateless
// version kiln speaks into an unsupported-version error, so the SDK falls
// back to the initialize handshake as the go-sdk client does. A 2025-11-25
// server may answer every method it does not know with an empty result
// (the conformance suite's do); the SDK would take that for a 2026-07-28
// server and then skip what that revision dropped, such as resuming an SSE
// stream the server closed before the response.
func checkDiscover(resp *transport.JSONRPCResponse) *transport.JSONRPCResponse {
	if resp == nil || resp.Error != nil {
		return resp
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(resp.Result, &res)
	if v := mcp.NegotiateMutuallySupportedVersion(res.SupportedVersions); mcp.IsModernProtocol(v) {
		return resp
	}
	return &transport.JSONRPCResponse{JSONRPC: resp.JSONRPC, ID: resp.ID, Error: &mcp.JSONRPCErrorDetails{
		Code:    mcp.UNSUPPORTED_PROTOCOL_VERSION,
		Message: fmt.Sprintf("server/discover result lists no stateless protocol version kiln supports (supportedVersions %q); using the initialize handshake", res.SupportedVersions),
	}}
}
