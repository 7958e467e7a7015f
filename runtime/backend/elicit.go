package backend

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// ElicitFunc answers a backend's elicitation/create: params and the
// result are the protocol's JSON ({"action": "accept", "content": {...}}),
// so nothing of the SDK leaks out of this package.
type ElicitFunc func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// elicitor adapts an ElicitFunc to the SDK's handler and fills in what the
// answer leaves out of an accepted form from the requested schema's
// defaults (SEP-1034): a client that shows a form with defaults returns
// them even when the person changed nothing.
type elicitor struct{ fn ElicitFunc }

func (e elicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, fmt.Errorf("encode elicitation request: %w", err)
	}
	raw, err := e.fn(ctx, params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("elicitation answer is not an ElicitResult: %w", err)
	}
	if res.Action == mcp.ElicitationResponseActionAccept {
		res.Content = withDefaults(req.Params.RequestedSchema, res.Content)
	}
	return &res, nil
}

// withDefaults returns content with each top-level property the schema
// gives a default for and content lacks set to that default.
func withDefaults(schema, content any) any {
	raw, err := json.Marshal(schema)
	if err != nil {
		return content
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return content
	}
	out := map[string]any{}
	if m, ok := content.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	} else if content != nil {
		return content // not an object: leave the answer as given
	}
	for name, p := range s.Properties {
		if _, ok := out[name]; ok || len(p.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			out[name] = v
		}
	}
	return out
}
