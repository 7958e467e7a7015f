package scrub

import "encoding/json"

// Content scrubs one MCP content block (a prompt message's content) or one
// resource contents item (resources/read) the way Result scrubs a tool
// result's blocks: every string but the base64 "data" of images and audio
// and the "blob" of binary contents, which replacing bytes would corrupt.
func (sc *Scrubber) Content(raw json.RawMessage) json.RawMessage {
	out, _ := sc.json(raw, contentBinary)
	return out
}

func contentBinary(path []string, key string) bool {
	return binaryField(path, key) || (key == "blob" && len(path) == 1)
}
