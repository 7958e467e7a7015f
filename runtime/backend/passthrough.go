package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// ErrUnsupported marks a request the backend's capabilities or protocol
// version rule out.
var ErrUnsupported = errors.New("not supported by this backend")

// ListResources returns every page of the backend's resources as it
// published them (annotations, icons, _meta and size included); nil when
// it offers no resources.
func (c *Conn) ListResources(ctx context.Context) ([]manifest.Resource, error) {
	if c.caps.Resources == nil {
		return nil, nil
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodResourcesList))
	if _, err := c.client.ListResources(ctx, mcp.ListResourcesRequest{}); err != nil {
		return nil, c.wrap("list resources", err)
	}
	return decodePages(c, capture, "resources", func(r manifest.Resource) string { return r.URI })
}

// ListResourceTemplates returns every page of the backend's resource
// templates as published.
func (c *Conn) ListResourceTemplates(ctx context.Context) ([]manifest.ResourceTemplate, error) {
	if c.caps.Resources == nil {
		return nil, nil
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodResourcesTemplatesList))
	if _, err := c.client.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err != nil {
		return nil, c.wrap("list resource templates", err)
	}
	return decodePages(c, capture, "resourceTemplates", func(t manifest.ResourceTemplate) string { return t.URITemplate })
}

// ListPrompts returns every page of the backend's prompts as published.
func (c *Conn) ListPrompts(ctx context.Context) ([]manifest.Prompt, error) {
	if c.caps.Prompts == nil {
		return nil, nil
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodPromptsList))
	if _, err := c.client.ListPrompts(ctx, mcp.ListPromptsRequest{}); err != nil {
		return nil, c.wrap("list prompts", err)
	}
	return decodePages(c, capture, "prompts", func(p manifest.Prompt) string { return p.Name })
}

// decodePages reads the items under key from every captured page, keeping
// the first of any repeated key (a server that repeats an item across pages).
func decodePages[T any](c *Conn, capture *rawCapture, key string, id func(T) string) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	for _, page := range capture.pages {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(page, &p); err != nil {
			return nil, fmt.Errorf("backend %q: malformed %s page: %w", c.name, capture.method, err)
		}
		var items []T
		if raw, ok := p[key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("backend %q: malformed %s page: %w", c.name, capture.method, err)
			}
		}
		for _, it := range items {
			if k := id(it); !seen[k] {
				seen[k] = true
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// ReadResource reads one resource and returns the backend's result as
// sent: text and blob contents with their _meta, untouched.
func (c *Conn) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	ctx, capture := withCapture(ctx, string(mcp.MethodResourcesRead))
	res, err := c.client.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return nil, c.passErr(capture, fmt.Sprintf("read %q", uri), err)
	}
	return lastPage(capture, res)
}

// GetPrompt renders one prompt with args and returns the result as sent.
func (c *Conn) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	if c.Stateless() {
		if r := takeRound(ctx); r != nil {
			return c.sendRound(ctx, mcp.MethodPromptsGet, fmt.Sprintf("get prompt %q", name), map[string]any{"name": name, "arguments": args}, nil, r)
		}
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodPromptsGet))
	res, err := c.client.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name, Arguments: args}})
	if err != nil {
		return nil, c.passErr(capture, fmt.Sprintf("get prompt %q", name), err)
	}
	return lastPage(capture, res)
}

// CompleteRef is what a completion/complete request completes: a prompt
// (by the backend's own name) or a resource template (by URI or template).
type CompleteRef struct {
	Prompt, URI string
}

// Complete asks the backend for completions of one argument; chosen holds
// the values of the arguments already filled in.
func (c *Conn) Complete(ctx context.Context, ref CompleteRef, arg, value string, chosen map[string]string) (json.RawMessage, error) {
	if c.caps.Completions == nil {
		return json.RawMessage(`{"completion":{"values":[]}}`), nil
	}
	params := mcp.CompleteParams{Argument: mcp.CompleteArgument{Name: arg, Value: value}}
	if ref.Prompt != "" {
		params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: ref.Prompt}
	} else {
		params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: ref.URI}
	}
	if len(chosen) > 0 {
		params.Context = mcp.CompleteContext{Arguments: chosen}
	}
	ctx, capture := withCapture(ctx, string(mcp.MethodCompletionComplete))
	res, err := c.client.Complete(ctx, mcp.CompleteRequest{Params: params})
	if err != nil {
		return nil, c.passErr(capture, "complete", err)
	}
	return lastPage(capture, res)
}

// SetLevel asks the backend for log messages at level and above. Sessions
// on 2026-07-28 carry the level on each request instead, so it is a no-op
// there.
func (c *Conn) SetLevel(ctx context.Context, level string) error {
	if c.caps.Logging == nil || c.protocol >= statelessProtocol {
		return nil
	}
	//lint:ignore SA1019 deprecated only from 2026-07-28, excluded above
	if err := c.client.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevel(level)}}); err != nil {
		return c.passErr(nil, "set log level", err)
	}
	return nil
}

// Subscribe asks the backend for notifications/resources/updated of uri.
func (c *Conn) Subscribe(ctx context.Context, uri string) error {
	return c.subscription(ctx, string(mcp.MethodResourcesSubscribe), uri)
}

// Unsubscribe ends a subscription Subscribe made.
func (c *Conn) Unsubscribe(ctx context.Context, uri string) error {
	return c.subscription(ctx, string(mcp.MethodResourcesUnsubscribe), uri)
}

// subscriptionIDs numbers the subscribe requests kiln sends itself; the
// prefix keeps them apart from the SDK's integer IDs on the same session.
var subscriptionIDs atomic.Int64

// subscription sends resources/(un)subscribe straight through the
// transport (the SDK client's method is deprecated and bound to its own
// listen filter). On 2026-07-28 the RPC is gone: the URI joins or leaves
// the filter of kiln's subscriptions/listen stream, which reopens.
func (c *Conn) subscription(ctx context.Context, method, uri string) error {
	if c.caps.Resources == nil || !c.caps.Resources.Subscribe {
		return fmt.Errorf("backend %q: %s %q: %w (it does not offer resource subscriptions)", c.name, method, uri, ErrUnsupported)
	}
	if c.protocol >= statelessProtocol {
		c.watched.mark(uri, method == string(mcp.MethodResourcesSubscribe))
		return nil
	}
	id := mcp.NewRequestId("kiln-sub-" + strconv.FormatInt(subscriptionIDs.Add(1), 10))
	resp, err := c.client.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: map[string]string{"uri": uri},
	})
	if err != nil {
		if ctx.Err() != nil && c.pipe != nil {
			// The SDK client would tell a stdio backend, but this request
			// bypasses it; HTTP and SSE transports tell theirs
			// (cancelRemote). Sent before returning, unlike a call's: the
			// caller follows it with an unsubscribe, which must not
			// overtake it.
			n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationCancelled),
				Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
			}}
			nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = c.client.GetTransport().SendNotification(nctx, n)
			cancel()
		}
		return c.passErr(nil, fmt.Sprintf("%s %q", method, uri), err)
	}
	if resp.Error != nil {
		return c.passErr(&rawCapture{rpcErr: resp.Error}, method, nil)
	}
	return nil
}

// RemoteError is a JSON-RPC error a backend answered with; the server
// passes its code and data on to the client.
type RemoteError struct {
	Backend string
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *RemoteError) Error() string { return fmt.Sprintf("backend %q: %s", e.Backend, e.Message) }

// passErr keeps a backend's JSON-RPC error (its code and data, e.g.
// resource-not-found with the URI) and wraps anything else with the stderr
// tail like other failures.
func (c *Conn) passErr(capture *rawCapture, op string, err error) error {
	if capture != nil && capture.rpcErr != nil {
		je := capture.rpcErr
		var raw json.RawMessage
		if je.Data != nil {
			raw, _ = json.Marshal(je.Data)
		}
		return &RemoteError{Backend: c.name, Code: je.Code, Message: je.Message, Data: raw}
	}
	if exit := c.gone(err); exit != nil {
		return c.wrap(op, fmt.Errorf("%w: %v", ErrGone, exit))
	}
	return c.wrap(op, err)
}

// lastPage returns the captured raw result, or the decoded one re-encoded
// when the transport did not capture (it always does for these methods).
func lastPage(capture *rawCapture, decoded any) (json.RawMessage, error) {
	if n := len(capture.pages); n > 0 {
		return capture.pages[n-1], nil
	}
	return json.Marshal(decoded)
}

// watchSet is the resources a 2026-07-28 session is subscribed to.
type watchSet struct {
	mu      sync.Mutex
	on      map[string]bool
	changed chan struct{} // made by listen; nil before
	restart atomic.Bool
}

func (w *watchSet) mark(uri string, on bool) {
	w.mu.Lock()
	if w.on == nil {
		w.on = map[string]bool{}
	}
	was := w.on[uri]
	if on {
		w.on[uri] = true
	} else {
		delete(w.on, uri)
	}
	ch := w.changed
	w.mu.Unlock()
	if was != on && ch != nil {
		select {
		case ch <- struct{}{}:
		default: // a reopen is already due and will read the new set
		}
	}
}

// signal returns the channel a change is announced on, making it once.
func (w *watchSet) signal() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{}, 1)
	}
	return w.changed
}

func (w *watchSet) uris() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.on))
}
