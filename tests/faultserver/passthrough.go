package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Passthrough mode (FAULT_PASSTHROUGH) gives the server a prompt and
// resources that fail on cue, for kiln's passthrough of prompts/get,
// resources/read and resources/(un)subscribe:
//
//	prompt greet(name)   -32602 with data {"argument":"name"} for name "nobody",
//	                     else one user message "hello <name>"
//	fault://doc          a text resource
//	fault://missing      listed, but its read answers -32002 (resource not found)
//	fault://slow-sub     a subscription to it never answers: it waits for
//	                     cancellation (notifications/cancelled) or the session's end
//
// Every subscribe and unsubscribe is recorded in events.log.

// greetArgumentError is the JSON-RPC error greet answers for an unknown
// name: a backend's own code and data, which kiln must pass on as sent.
func greetArgumentError(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("greet: no one is called %q", name),
		Data: json.RawMessage(`{"argument":"name"}`)}
}

// passthroughOptions are the server options passthrough mode needs: the
// subscription handlers, which the SDK takes only at construction.
func passthroughOptions(opts *mcp.ServerOptions, events *eventLog) {
	opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
		uri := req.Params.URI
		events.add("subscribe %s", uri)
		if uri != "fault://slow-sub" {
			return nil
		}
		<-ctx.Done()
		events.add("cancelled subscribe %s", uri)
		return ctx.Err()
	}
	opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
		events.add("unsubscribe %s", req.Params.URI)
		return nil
	}
}

// addPassthrough registers the prompt and resources.
func addPassthrough(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets name; answers -32602 for the name \"nobody\".",
		Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name := req.Params.Arguments["name"]
			if name == "nobody" {
				return nil, greetArgumentError(name)
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + name}}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "fault://doc", Name: "doc", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "a fault document"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "fault://missing", Name: "missing", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		})
	srv.AddResource(&mcp.Resource{URI: "fault://slow-sub", Name: "slow-sub", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "slow to subscribe"}}}, nil
		})
}

// hugeTemplate is an RFC 6570 template with 1,002 variables in one
// expression. The RFC sets no limit, and a parser accepts it; a matcher
// built as a regexp repeats the list 1,001 times, past regexp's limit of
// 1,000 (FAULT_HUGE_TEMPLATE).
var hugeTemplate = func() string {
	names := make([]string, 1002)
	for i := range names {
		names[i] = fmt.Sprintf("v%d", i)
	}
	return "fault-huge://{" + strings.Join(names, ",") + "}"
}()

// addHugeTemplate lists hugeTemplate; a read by it answers with the URI.
func addHugeTemplate(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: hugeTemplate, Name: "huge", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "huge"}}}, nil
		})
}
