package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Param is one top-level argument of a tool, read from its input schema.
type Param struct {
	Name        string
	Type        string // JSON Schema type, "any" when absent or mixed
	Description string
	Required    bool
	Enum        []string
}

// Params returns the top-level arguments of the tool, required first, then
// by name. Schemas kiln cannot read yield no params rather than an error:
// the backend still validates its own input.
func (t *Tool) Params() []Param {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(t.InputSchema, &s) != nil {
		return nil
	}
	out := make([]Param, 0, len(s.Properties))
	for name, p := range s.Properties {
		param := Param{Name: name, Type: typeName(p.Type), Description: p.Description, Required: slices.Contains(s.Required, name)}
		for _, e := range p.Enum {
			param.Enum = append(param.Enum, fmt.Sprint(e))
		}
		out = append(out, param)
	}
	slices.SortFunc(out, func(a, b Param) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func typeName(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, p := range t {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "|")
		}
	}
	return "any"
}

// Signature renders the argument shape compactly, e.g.
// `{query: string, limit?: integer}`, for errors and brief tool info.
func (t *Tool) Signature() string {
	params := t.Params()
	parts := make([]string, 0, len(params))
	for _, p := range params {
		opt := "?"
		if p.Required {
			opt = ""
		}
		typ := p.Type
		if len(p.Enum) > 0 && len(p.Enum) <= 6 {
			typ = `"` + strings.Join(p.Enum, `"|"`) + `"`
		}
		parts = append(parts, fmt.Sprintf("%s%s: %s", objectKey(p.Name), opt, typ))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Example renders a call of the tool with placeholder values for its
// required arguments, in the TypeScript form call_tool_chain accepts. ref
// returns how a script names the tool ("obj.tool"), which the sandbox
// bridge decides.
func (t *Tool) Example(ref func(backend, tool string) string) string {
	var args []string
	for _, p := range t.Params() {
		if !p.Required {
			continue
		}
		args = append(args, objectKey(p.Name)+": "+placeholder(p))
	}
	return fmt.Sprintf("%s({%s})", ref(t.Backend, t.Name), strings.Join(args, ", "))
}

func placeholder(p Param) string {
	if len(p.Enum) > 0 {
		b, _ := json.Marshal(p.Enum[0])
		return string(b)
	}
	switch strings.SplitN(p.Type, "|", 2)[0] {
	case "string":
		return `"…"`
	case "integer", "number":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[]"
	case "object":
		return "{}"
	}
	return "null"
}

// objectKey writes a property name as a JS object key, quoting it only
// when it is not a plain identifier.
func objectKey(name string) string {
	plain := name != ""
	for i, r := range name {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	b, _ := json.Marshal(name)
	return string(b)
}

// TaskRequired reports whether the backend only runs this tool as an MCP
// task (execution.taskSupport "required").
func (t *Tool) TaskRequired() bool {
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	// Every call asks: most tools' execution does not mention "required"
	// at all, and need no decode.
	return bytes.Contains(t.Execution, []byte("required")) && json.Unmarshal(t.Execution, &e) == nil && e.TaskSupport == "required"
}
