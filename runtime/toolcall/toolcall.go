package toolcall

import (
	"context"
	"encoding/json"
	"fmt"
)

// Caller dispatches one call to one backend tool. The gateway's dispatcher
// implements it; generated stubs and the sandbox bridge consume it.
type Caller interface {
	CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*Result, error)
}

// Result is a backend's CallToolResult kept as raw JSON content blocks, so
// text, images, audio, embedded resources, structuredContent and isError pass
// through kiln exactly as the backend sent them.
type Result struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	Meta              json.RawMessage   `json:"_meta,omitempty"`
}

// Text returns a result holding one text block.
func Text(s string) *Result {
	block, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return &Result{Content: []json.RawMessage{block}}
}

// Errorf returns an isError result whose text is written for a model: say
// what went wrong and what to call instead.
func Errorf(format string, a ...any) *Result {
	r := Text(fmt.Sprintf(format, a...))
	r.IsError = true
	return r
}

// TextContent joins the text of every text block. Non-text blocks are
// skipped; callers that need them read Content directly.
func (r *Result) TextContent() string {
	var out []byte
	for _, c := range r.Content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &b) == nil && b.Type == "text" {
			if len(out) > 0 {
				out = append(out, '\n')
			}
			out = append(out, b.Text...)
		}
	}
	return string(out)
}

// Call marshals typed arguments and dispatches them through c. Generated
// stubs use it so a Go program gets compile-time argument types.
func Call[T any](ctx context.Context, c Caller, backend, tool string, args T) (*Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: encode arguments: %w", backend, tool, err)
	}
	return c.CallTool(ctx, backend, tool, raw)
}
