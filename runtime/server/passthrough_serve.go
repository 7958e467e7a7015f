package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/policy"
)

// kilnPrompts are kiln's own prompt names, which no backend prompt takes.
var kilnPrompts = map[string]bool{promptDiscover: true, promptFindTool: true, promptStatus: true}

// kilnTemplates are kiln's own resource templates as registered, for
// re-registering them when a backend template goes away.
func kilnTemplates(s *Server) []server.ServerResourceTemplate {
	_, templates := s.resourceDefs()
	out := make([]server.ServerResourceTemplate, 0, len(templates))
	for _, d := range templates {
		out = append(out, server.ServerResourceTemplate{
			Template: mcp.NewResourceTemplate(d.uri, d.name, mcp.WithTemplateDescription(d.description), mcp.WithTemplateMIMEType(d.mime)),
			Handler:  server.ResourceTemplateHandlerFunc(s.serveResource(d)),
		})
	}
	return out
}

// rawResourceContents sends a backend's resource contents item exactly as
// the backend wrote it (after scrubbing): the SDK's types would drop keys
// they do not model. Embedding gives it the SDK's marker method.
type rawResourceContents struct {
	mcp.TextResourceContents
	raw json.RawMessage
}

// MarshalJSON returns the backend's bytes.
func (r rawResourceContents) MarshalJSON() ([]byte, error) { return r.raw, nil }

// rawContent is a prompt message's content block as the backend sent it.
type rawContent struct {
	mcp.TextContent
	raw json.RawMessage
}

// MarshalJSON returns the backend's bytes.
func (r rawContent) MarshalJSON() ([]byte, error) { return r.raw, nil }

// observed routes what a backend asks the client or logs while it serves
// a client's resources/read, prompts/get or completion to that client, as
// during a tool call. A 2026-07-28 request cannot be sent requests (its
// prompt rounds pass through instead, round.go): only its logs are routed.
func (p *passthru) observed(ctx context.Context) context.Context {
	var client *callClient
	if !modern(ctx) {
		client = p.s.newCallClient(ctx, nil)
	}
	return p.s.observeWith(ctx, mcp.CallToolRequest{}, client)
}

// read serves resources/read of a backend resource: the SDK matched the
// URI to one of the registered lists, and the routing table says which
// backend owns it (the first declared when several claim it).
func (p *passthru) read(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	owner, ok := p.owner(uri)
	// A resource the identity may not read does not exist for it.
	if !ok || p.s.opts.Passthrough == nil || !p.s.allowsKey(ctx, policy.ResourceKey(uri)) {
		return nil, fmt.Errorf("handler not found for resource URI '%s': %w", uri, server.ErrResourceNotFound)
	}
	raw, err := p.s.opts.Passthrough.ReadResource(p.observed(ctx), owner, uri)
	if err != nil {
		return nil, p.relayErr(ctx, notFoundOfEra(ctx, uri, err))
	}
	var res struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("backend %q answered resources/read of %s with a malformed result: %v", owner, uri, err)
	}
	out := make([]mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		out = append(out, rawResourceContents{raw: p.s.opts.Scrubber.Content(c)})
	}
	return out, nil
}

// prompt serves prompts/get of a backend prompt under its exposed name,
// passing the arguments through and the messages back as sent.
func (p *passthru) prompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	ref, ok := p.promptOf(req.Params.Name)
	if !ok || p.s.opts.Passthrough == nil || !p.s.allowsKey(ctx, policy.PromptKey(ref.backend, ref.name)) {
		return nil, fmt.Errorf("prompt %q not found; prompts/list shows the prompts kiln serves", req.Params.Name)
	}
	// A 2026-07-28 client's rounds pass through as for tools (round.go).
	round := roundOf(ctx, req.Params.MultiRoundTripParams)
	if round != nil {
		ctx = withRound(ctx, round)
	}
	raw, err := p.s.opts.Passthrough.GetPrompt(p.observed(ctx), ref.backend, ref.name, req.Params.Arguments)
	if err != nil {
		if round != nil && round.Err != nil {
			relayError(ctx, scrubRPCError(p.s.opts.Scrubber, round.Err))
			return nil, p.backendErr(err)
		}
		return nil, p.relayErr(ctx, err)
	}
	if round != nil && round.InputRequired != nil {
		raw = scrubRound(p.s.opts.Scrubber, raw)
		return mcp.ParseGetPromptResult(&raw)
	}
	var res struct {
		Description string          `json:"description"`
		Meta        json.RawMessage `json:"_meta"`
		Messages    []struct {
			Role    mcp.Role        `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("backend %q answered prompts/get of %q with a malformed result: %v", ref.backend, ref.name, err)
	}
	if d, ok := p.reviewedDescription(ref); ok {
		res.Description = d
	}
	out := &mcp.GetPromptResult{Description: p.s.opts.Scrubber.String(res.Description), Messages: make([]mcp.PromptMessage, 0, len(res.Messages))}
	if len(res.Meta) > 0 && string(res.Meta) != "null" {
		var meta mcp.Meta
		if json.Unmarshal(p.s.opts.Scrubber.JSON(res.Meta), &meta) == nil {
			out.Meta = &meta
		}
	}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, mcp.PromptMessage{Role: m.Role, Content: rawContent{raw: p.s.opts.Scrubber.Content(m.Content)}})
	}
	return out, nil
}

// backendErr turns a backend failure into the error a client sees,
// scrubbed: the backend's own message when it answered with a JSON-RPC
// error, else kiln's account (not connected, timed out, gone).
func (p *passthru) backendErr(err error) error {
	var re *backend.RemoteError
	if errors.As(err, &re) {
		return errors.New(p.s.opts.Scrubber.String(re.Error()))
	}
	return errors.New(p.s.opts.Scrubber.String(err.Error()))
}

// relayErr is backendErr for a request the client is owed the backend's
// own error for: a backend's JSON-RPC error (-32602 for an unknown prompt
// argument, -32002 for a missing resource, with its data) is relayed as
// sent, scrubbed, where the transport can answer with it (relay.go); mcp-go
// answers every handler error with -32603.
//
// Errors about kiln's own exchange with the backend are not relayed (see
// hopError): they stay -32603 with the backend's message in the text.
func (p *passthru) relayErr(ctx context.Context, err error) error {
	var re *backend.RemoteError
	if errors.As(err, &re) && !hopError(re.Code) {
		e := &mcp.JSONRPCErrorDetails{Code: re.Code, Message: re.Message}
		if len(re.Data) > 0 {
			e.Data = re.Data
		}
		relayError(ctx, scrubRPCError(p.s.opts.Scrubber, e))
	}
	return p.backendErr(err)
}

// hopError reports whether a backend's error code is about kiln's request
// to it (its bytes, envelope, method, headers or protocol version) rather
// than the client's: relayed, it would tell the client that its own
// request to kiln was malformed, that kiln lacks the method, or that kiln
// refuses its protocol version (a 2026-07-28 client drops or renegotiates
// on -32022, with HTTP 400), none of which is so.
func hopError(code int) bool {
	switch code {
	case mcp.PARSE_ERROR, mcp.INVALID_REQUEST, mcp.METHOD_NOT_FOUND, mcp.HEADER_MISMATCH, mcp.UNSUPPORTED_PROTOCOL_VERSION:
		return true
	}
	return false
}

// notFoundOfEra gives a backend's resource-not-found answer for uri the
// code of the client's protocol era: the backend answered in its own
// (-32002 before 2026-07-28, -32602 from then on, both with data.uri), and
// a client across kiln may speak the other. Any other error is returned
// as it is.
func notFoundOfEra(ctx context.Context, uri string, err error) error {
	var re *backend.RemoteError
	if !errors.As(err, &re) || (re.Code != mcp.RESOURCE_NOT_FOUND && re.Code != mcp.INVALID_PARAMS) {
		return err
	}
	var data struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(re.Data, &data) != nil || data.URI != uri {
		return err
	}
	out := *re
	out.Code = mcp.RESOURCE_NOT_FOUND
	if modern(ctx) {
		out.Code = mcp.INVALID_PARAMS
	}
	return &out
}

// complete forwards a completion request to the backend that owns ref,
// reporting false when no backend does.
func (p *passthru) complete(ctx context.Context, ref backend.CompleteRef, owner string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	raw, err := p.s.opts.Passthrough.Complete(p.observed(ctx), owner, ref, arg.Name, arg.Value, cc.Arguments)
	if err != nil {
		return nil, p.relayErr(ctx, err)
	}
	var res struct {
		Completion mcp.Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("backend %q answered completion/complete with a malformed result: %v", owner, err)
	}
	for i, v := range res.Completion.Values {
		res.Completion.Values[i] = p.s.opts.Scrubber.String(v)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res.Completion, nil
}
