package scrub

import (
	"encoding/json"
	"slices"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Result scrubs a tool result: the text of text blocks, the text of
// embedded resources, every other string in a content block,
// structuredContent and _meta. The base64 data of image and audio blocks
// and the blob of embedded resources are never touched: replacing bytes
// inside them would corrupt the binary, and base64 cannot show a secret to
// a reader anyway.
//
// Result never mutates r. It returns r itself when nothing was redacted,
// the common case, and otherwise a copy sharing r's unchanged blocks.
func (sc *Scrubber) Result(r *toolcall.Result) *toolcall.Result {
	if sc == nil || r == nil {
		return r
	}
	var blocks []json.RawMessage
	for i, c := range r.Content {
		out, changed := sc.json(c, binaryField)
		if !changed {
			continue
		}
		if blocks == nil {
			blocks = slices.Clone(r.Content)
		}
		blocks[i] = out
	}
	structured, sChanged := sc.json(r.StructuredContent, nil)
	meta, mChanged := sc.json(r.Meta, nil)
	if blocks == nil && !sChanged && !mChanged {
		return r
	}
	out := *r
	if blocks != nil {
		out.Content = blocks
	}
	out.StructuredContent = structured
	out.Meta = meta
	return &out
}

// binaryField matches the base64 fields of MCP content blocks: "data" of
// an image or audio block and "blob" of an embedded resource. It goes by
// position, not by the block's "type", which may come after the data.
func binaryField(path []string, key string) bool {
	switch key {
	case "data":
		return len(path) == 1
	case "blob":
		return len(path) == 2 && path[1] == "resource"
	}
	return false
}
