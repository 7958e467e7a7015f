package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// The methods below forward what a client asks of a backend's resources,
// prompts, completions, subscriptions and logging. Each runs within the
// backend's call timeout; like a tool call, one made while the backend is
// still connecting waits for it within that timeout, and a backend that is
// down gets the same error a tool call would.

// onConn runs f on the backend's connection. A request made with a
// context from WithObserver is tracked like a call, aside: what the
// backend asks the client while it serves it (a prompt that samples) goes
// to that caller, and so do its log messages, unless a tool call is in
// flight on the backend, whose they are taken to be (before, another
// client's read in flight made a call's question be refused).
func (d *Dispatcher) onConn(ctx context.Context, name, op string, f func(context.Context, *backend.Conn) error) error {
	_, conn, lim, deadline, err := d.awaitConn(ctx, name, "")
	if err != nil {
		return err
	}
	cctx, cancel := context.WithDeadline(withClient(ctx), deadline)
	defer cancel()
	tctx := cctx
	if obs := ObserverFrom(cctx); obs != nil {
		aside := *obs
		aside.aside = true
		tctx = WithObserver(cctx, &aside)
	}
	_, done := d.obs.track(tctx, name)
	defer done()
	err = f(cctx, conn)
	if err == nil {
		return nil
	}
	// As for a tool call: say what ended the request and what to do.
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Backend: name, Err: err,
			Message: fmt.Sprintf("%s on backend %q did not answer before the caller's deadline; kiln told %s to stop", op, name, name)}
	case ctx.Err() != nil:
		return &Error{Code: CodeCanceled, Backend: name, Err: err,
			Message: fmt.Sprintf("%s on backend %q was canceled by the client before %s answered", op, name, name)}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Backend: name, Err: err,
			Message: fmt.Sprintf("%s on backend %q did not answer within %s (its call timeout); kiln told %s to stop; retry, or raise backends.%s.timeout", op, name, lim.timeout, name, name)}
	case errors.Is(err, backend.ErrGone):
		return &Error{Code: CodeUnavailable, Backend: name, Err: err,
			Message: fmt.Sprintf("%s failed: backend %q stopped while serving it: %v\nkiln restarts it automatically; read kiln://backend/%s for when, then retry.", op, name, err, name)}
	}
	return err
}

// ListResources lists a connected backend's resources as it publishes them.
func (d *Dispatcher) ListResources(ctx context.Context, name string) (out []manifest.Resource, err error) {
	err = d.onConn(ctx, name, "resources/list", func(ctx context.Context, c *backend.Conn) error {
		out, err = c.ListResources(ctx)
		return err
	})
	return out, err
}

// ListResourceTemplates lists a connected backend's resource templates.
func (d *Dispatcher) ListResourceTemplates(ctx context.Context, name string) (out []manifest.ResourceTemplate, err error) {
	err = d.onConn(ctx, name, "resources/templates/list", func(ctx context.Context, c *backend.Conn) error {
		out, err = c.ListResourceTemplates(ctx)
		return err
	})
	return out, err
}

// ListPrompts lists a connected backend's prompts.
func (d *Dispatcher) ListPrompts(ctx context.Context, name string) (out []manifest.Prompt, err error) {
	err = d.onConn(ctx, name, "prompts/list", func(ctx context.Context, c *backend.Conn) error {
		out, err = c.ListPrompts(ctx)
		return err
	})
	return out, err
}

// ReadResource reads uri from backend name and returns its raw result.
func (d *Dispatcher) ReadResource(ctx context.Context, name, uri string) (out json.RawMessage, err error) {
	err = d.onConn(ctx, name, "resources/read of "+uri, func(ctx context.Context, c *backend.Conn) error {
		out, err = c.ReadResource(ctx, uri)
		return err
	})
	return out, err
}

// GetPrompt renders the backend's prompt (by its own name) with args.
func (d *Dispatcher) GetPrompt(ctx context.Context, name, prompt string, args map[string]string) (out json.RawMessage, err error) {
	err = d.onConn(ctx, name, "prompts/get of "+strconv.Quote(prompt), func(ctx context.Context, c *backend.Conn) error {
		out, err = c.GetPrompt(ctx, prompt, args)
		return err
	})
	return out, err
}

// Complete asks the backend to complete one argument of ref.
func (d *Dispatcher) Complete(ctx context.Context, name string, ref backend.CompleteRef, arg, value string, chosen map[string]string) (out json.RawMessage, err error) {
	err = d.onConn(ctx, name, "completion/complete", func(ctx context.Context, c *backend.Conn) error {
		out, err = c.Complete(ctx, ref, arg, value, chosen)
		return err
	})
	return out, err
}

// Subscribe asks the backend for updates of uri.
func (d *Dispatcher) Subscribe(ctx context.Context, name, uri string) error {
	return d.onConn(ctx, name, "resources/subscribe to "+uri, func(ctx context.Context, c *backend.Conn) error { return c.Subscribe(ctx, uri) })
}

// Unsubscribe ends a subscription on the backend.
func (d *Dispatcher) Unsubscribe(ctx context.Context, name, uri string) error {
	return d.onConn(ctx, name, "resources/unsubscribe from "+uri, func(ctx context.Context, c *backend.Conn) error { return c.Unsubscribe(ctx, uri) })
}

// SetLevel sets the log level of one connected backend.
func (d *Dispatcher) SetLevel(ctx context.Context, name, level string) error {
	return d.onConn(ctx, name, "logging/setLevel", func(ctx context.Context, c *backend.Conn) error { return c.SetLevel(ctx, level) })
}

// tagLogger names the backend in a log message's logger ("backend/NAME",
// or "backend/NAME/theirs" when the backend named one), so a client that
// reads logs from many backends through kiln knows which one spoke.
func tagLogger(name string, params json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil || m == nil { // null leaves m nil
		return params
	}
	tag := "backend/" + name
	var theirs string
	if json.Unmarshal(m["logger"], &theirs) == nil && theirs != "" {
		tag += "/" + theirs
	}
	m["logger"], _ = json.Marshal(tag)
	out, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return out
}
