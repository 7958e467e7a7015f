package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/safe"
)

// Requester answers a backend's requests to the client
// (sampling/createMessage, elicitation/create, roots/list) by asking the
// client session that made the call the backend is serving. params and the
// result are the raw JSON-RPC params and result.
type Requester interface {
	ClientRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

type requesterKey struct{}

// WithRequester returns a context whose backend calls send the backend's
// requests to r. The SDK hands that context to the request handlers when
// it can tie a request to the call: the input-required rounds of a
// 2026-07-28 call, and requests a streamable HTTP backend sends on the
// call's own response stream.
func WithRequester(ctx context.Context, r Requester) context.Context {
	return context.WithValue(ctx, requesterKey{}, r)
}

// clientOptions makes kiln's client offer what it can forward: sampling,
// elicitation in form and URL mode, and roots with list_changed. Nothing is
// offered without opts.OnRequest (kiln-gen record), so a backend never
// sees a capability no one answers.
func clientOptions(opts Options, name string) []client.ClientOption {
	if opts.OnRequest == nil {
		return nil
	}
	f := &forwarder{name: name, route: opts.OnRequest, log: opts.Log}
	return []client.ClientOption{
		client.WithClientCapabilities(mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapability{},
			Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
			Roots: &struct {
				ListChanged bool `json:"listChanged,omitempty"`
			}{ListChanged: true},
		}),
		client.WithSamplingHandler(f),
		client.WithElicitationHandler(f),
		client.WithRootsHandler(f),
	}
}

// forwarder is the SDK's sampling, elicitation and roots handler for one
// backend: it sends each request to the call's requester when the context
// names one, else to the dispatcher's routing (route).
type forwarder struct {
	name  string
	route func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	log   *slog.Logger
}

// replyMargin is how long before its deadline a question is given up, so
// the refusal still reaches the backend.
const replyMargin = 2 * time.Second

func (f *forwarder) forward(ctx context.Context, method string, params any, out any) (err error) {
	// The SDK asks on a goroutine of its own for a stdio backend, where a
	// panic would end kiln: the backend gets an error answer instead.
	defer safe.AsError(f.log, "kiln's handling of backend "+f.name+"'s "+method, &err)
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("kiln could not encode backend %q's %s request: %w", f.name, method, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		// mcp-go sends the answer to a question from an HTTP backend's
		// stream under the question's own 30 s deadline: an answer later
		// than that is lost and the backend waits for nothing. Give up
		// early enough that the refusal still reaches it.
		left := time.Until(dl.Add(-replyMargin)).Round(time.Second)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-replyMargin))
		defer cancel()
		defer func() {
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Not wrapped: the SDK replaces a cancellation's text with
				// "request was cancelled", and this one says why.
				err = fmt.Errorf("the client did not answer backend %q's %s within the %s left for it (the call's timeout, or the 30 s an HTTP backend's question gets); last: %v",
					f.name, method, left, err)
			}
		}()
	}
	var res json.RawMessage
	if r, ok := ctx.Value(requesterKey{}).(Requester); ok && r != nil {
		res, err = r.ClientRequest(ctx, method, raw)
	} else {
		res, err = f.route(ctx, method, raw)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("the client's answer to backend %q's %s is malformed: %w", f.name, method, err)
	}
	return nil
}

func (f *forwarder) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var out mcp.CreateMessageResult
	if err := f.forward(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (f *forwarder) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var out mcp.ElicitationResult
	if err := f.forward(ctx, string(mcp.MethodElicitationCreate), req.Params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (f *forwarder) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var out mcp.ListRootsResult
	if err := f.forward(ctx, string(mcp.MethodListRoots), struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RootsChanged tells the backend that the client's roots changed
// (notifications/roots/list_changed); it asks roots/list again if it cares.
func (c *Conn) RootsChanged(ctx context.Context) error {
	if err := c.client.RootListChanges(ctx); err != nil {
		return c.wrap("roots list_changed", err)
	}
	return nil
}

// requesterSession is the client session of the call in ctx, when its
// requester names one.
func requesterSession(ctx context.Context) string {
	if r, ok := ctx.Value(requesterKey{}).(interface{ SessionID() string }); ok && r != nil {
		return r.SessionID()
	}
	return ""
}
