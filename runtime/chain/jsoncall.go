package chain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	trimmed := bytes.TrimSpace([]byte(code))
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return jsonCall{}, false, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(trimmed, &obj) != nil {
		return jsonCall{}, false, nil
	}
	rawTool, has := obj["tool"]
	if !has {
		return jsonCall{}, false, nil
	}
	var extra []string
	for k := range obj {
		if k != "tool" && k != "arguments" {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		return jsonCall{}, true, fmt.Errorf("a JSON call takes only \"tool\" and \"arguments\"; remove %s. Example: {\"tool\": \"backend.tool\", \"arguments\": {…}}", strings.Join(extra, ", "))
	}
	if err := json.Unmarshal(rawTool, &call.Tool); err != nil || call.Tool == "" {
		return jsonCall{}, true, fmt.Errorf("\"tool\" must be a non-empty string such as \"backend.tool\"")
	}
	call.Args = obj["arguments"]
	switch a := bytes.TrimSpace(call.Args); {
	case len(a) == 0 || string(a) == "null":
		call.Args = json.RawMessage(`{}`)
	case a[0] != '{':
		return jsonCall{}, true, fmt.Errorf("\"arguments\" must be a JSON object of named arguments, got %s", a)
	}
	return call, true, nil
}
