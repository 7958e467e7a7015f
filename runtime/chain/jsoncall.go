package chain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// jsonCall is a tier-1 request: {"tool": "backend.tool", "arguments": {…}}.
type jsonCall struct {
	Tool string
	Args json.RawMessage
}

// parseJSONCall recognizes a tier-1 JSON call. ok is false when code is not a
// JSON object with a "tool" key, so other tiers can try it; err is set when
// it is clearly meant as tier 1 but malformed, so the caller learns why
// instead of getting a confusing JavaScript syntax error.
func parseJSONCall(code string) (call jsonCall, ok bool, err error) {
	trimmed := strings.TrimSpace(code)
	if len(trimmed) == 0 || trimmed[0] != '{' || !jsontext.Valid([]byte(trimmed)) {
		return jsonCall{}, false, nil
	}
	// The members are found by a scan, not decoded into a map: a tier-1
	// call's arguments pass through as the bytes the caller sent.
	var rawTool, rawArgs string
	var hasTool bool
	var extra []string
	for k, v := range jsontext.Members(trimmed) {
		switch key := jsontext.DecodeString(k); key {
		case "tool":
			rawTool, hasTool = v, true
		case "arguments":
			rawArgs = v
		default:
			if !slices.Contains(extra, key) {
				extra = append(extra, key)
			}
		}
	}
	if !hasTool {
		return jsonCall{}, false, nil
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		return jsonCall{}, true, fmt.Errorf("a JSON call takes only \"tool\" and \"arguments\"; remove %s. Example: {\"tool\": \"backend.tool\", \"arguments\": {…}}", strings.Join(extra, ", "))
	}
	if rawTool[0] != '"' || jsontext.DecodeString(rawTool) == "" {
		return jsonCall{}, true, fmt.Errorf("\"tool\" must be a non-empty string such as \"backend.tool\"")
	}
	call.Tool = jsontext.DecodeString(rawTool)
	if rawArgs != "" {
		call.Args = json.RawMessage(rawArgs)
	}
	switch a := bytes.TrimSpace(call.Args); {
	case len(a) == 0 || string(a) == "null":
		call.Args = json.RawMessage(`{}`)
	case a[0] != '{':
		return jsonCall{}, true, fmt.Errorf("\"arguments\" must be a JSON object of named arguments, got %s", a)
	}
	return call, true, nil
}
