package main

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type askIn struct {
	Question string `json:"question" jsonschema:"the message of the elicitation"`
}

// ask elicits a name from the client the way a 2026-07-28 server does: it
// returns an input-required result and reads the answer from the retry.
// The SDK turns that into an elicitation/create request for clients on
// earlier protocols, sent on the call's own stream where there is one.
func (ts *tools) ask(_ context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
		ts.events.add("answered %s", r.Action)
		if r.Action != "accept" {
			return toolError("the user chose %s", r.Action), nil, nil
		}
		return text(fmt.Sprintf("answer: %v", r.Content["name"])), nil, nil
	}
	ts.events.add("asked %s", in.Question)
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
		Message: in.Question,
		RequestedSchema: map[string]any{"type": "object", "required": []string{"name"},
			"properties": map[string]any{"name": map[string]any{"type": "string"}}},
	}}}, nil, nil
}
