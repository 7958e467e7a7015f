package emit

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// field renders a one-tool backend whose only property "p" has schema prop
// and returns the struct field line for it, whitespace folded.
func field(t *testing.T, prop string, required bool) string {
	t.Helper()
	schema := `{"type":"object","properties":{"p":` + prop + `}`
	if required {
		schema += `,"required":["p"]`
	}
	schema += `}`
	src := renderOne(t, schema)
	for line := range strings.SplitSeq(src, "\n") {
		if strings.Contains(line, "`json:\"p") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	t.Fatalf("no field for %s in:\n%s", prop, src)
	return ""
}

func renderOne(t *testing.T, schema string) string {
	t.Helper()
	m := &manifest.Manifest{Version: 1, Backend: "b", Tools: []manifest.Tool{{Name: "t", InputSchema: json.RawMessage(schema)}}}
	src, err := backendFile(m, "b")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func TestFieldTypes(t *testing.T) {
	tests := []struct {
		prop     string
		required bool
		want     string
	}{
		{`{"type":"string"}`, true, "P string `json:\"p\"`"},
		{`{"type":"string"}`, false, "P *string `json:\"p,omitempty\"`"},
		{`{"type":"integer"}`, false, "P *int64 `json:\"p,omitempty\"`"},
		{`{"type":"number"}`, true, "P float64 `json:\"p\"`"},
		{`{"type":"boolean"}`, false, "P *bool `json:\"p,omitempty\"`"},
		{`{"type":"array","items":{"type":"string"}}`, false, "P []string `json:\"p,omitempty\"`"},
		{`{"type":"array","items":{"type":"string"}}`, true, "P []string `json:\"p\"`"},
		{`{"type":"array"}`, false, "P []json.RawMessage `json:\"p,omitempty\"`"},
		{`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}`, false, "P []TArgsPItem `json:\"p,omitempty\"`"},
		{`{"type":["string","null"]}`, true, "P *string `json:\"p\"`"},
		{`{"anyOf":[{"type":"string"},{"type":"null"}]}`, false, "P *string `json:\"p,omitempty\"`"},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, false, "P TArgsP `json:\"p,omitzero\"`"},
		{`{"oneOf":[{"type":"string"},{"type":"number"}]}`, true, "P TArgsP `json:\"p\"`"},
		{`{"type":"string","anyOf":[{"format":"ipv4"},{"format":"ipv6"}]}`, true, "P string `json:\"p\"`"},
		{`{"anyOf":[{"type":"integer"},{"type":"number"},{"type":"null"}]}`, false, "P *float64 `json:\"p,omitempty\"`"},
		{`{"oneOf":[{"type":"string","format":"date"},{"type":"string","format":"date-time"}]}`, true, "P string `json:\"p\"`"},
		{`{"anyOf":[{"type":"integer"},{"type":"string"}]}`, true, "P TArgsP `json:\"p\"`"},
		{`{"$ref":"#/$defs/x"}`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		{`{"allOf":[{"type":"string"}]}`, true, "P string `json:\"p\"`"},
		{`{"allOf":[{"type":"string"},{"minLength":1}]}`, true, "P json.RawMessage `json:\"p\"`"},
		{`{"type":["string","number"]}`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		{`{"type":"object"}`, false, "P map[string]any `json:\"p,omitempty\"`"},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, false, "P map[string]int64 `json:\"p,omitempty\"`"},
		{`{"type":"object","properties":{},"additionalProperties":true}`, false, "P map[string]any `json:\"p,omitempty\"`"},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true, "P TArgsP `json:\"p\"`"},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, false, "P *TArgsP `json:\"p,omitempty\"`"},
		{`{"type":"object","properties":{"a,b":{"type":"string"}}}`, false, "P map[string]any `json:\"p,omitempty\"`"},
		{`{"enum":["a","b"]}`, false, "P *string `json:\"p,omitempty\"`"},
		{`{"enum":["a",1]}`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		{`{}`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		{`true`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		{`"not a schema"`, false, "P json.RawMessage `json:\"p,omitempty\"`"},
		// Malformed keywords count as absent; "properties" still says object.
		{`{"type":7,"required":"yes","properties":[]}`, false, "P map[string]any `json:\"p,omitempty\"`"},
	}
	for _, tt := range tests {
		if got := field(t, tt.prop, tt.required); got != tt.want {
			t.Errorf("%s (required %v):\n got %s\nwant %s", tt.prop, tt.required, got, tt.want)
		}
	}
}

func TestFieldDocs(t *testing.T) {
	src := renderOne(t, `{"type":"object","properties":{"p":{"type":"string","description":"Sort order.\nMore text.","enum":["asc","desc"],"default":"asc"}}}`)
	if want := `// Sort order. One of "asc", "desc". Default "asc".`; !strings.Contains(src, want) {
		t.Errorf("missing %q in:\n%s", want, src)
	}
}

func TestDepthLimit(t *testing.T) {
	schema := `{"type":"string"}`
	for range 3 * maxDepth {
		schema = `{"type":"object","properties":{"a":` + schema + `},"required":["a"]}`
	}
	src := renderOne(t, schema)
	structs := len(regexp.MustCompile(`(?m)^type \w+ struct`).FindAllString(src, -1))
	if structs == 0 || structs > maxDepth+1 {
		t.Errorf("%d struct types for a %d-deep schema, want 1..%d", structs, 3*maxDepth, maxDepth+1)
	}
	if !strings.Contains(src, "A json.RawMessage `json:\"a\"`") {
		t.Errorf("the level past maxDepth is not json.RawMessage:\n%s", src)
	}
}

func TestDocText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Adds two numbers. Then more.", "Adds two numbers."},
		{"\n\n  First line\nsecond", "First line"},
		{"v1.2 is the version", "v1.2 is the version"},
		{"//go:generate rm -rf /", "go:generate rm -rf /"},
		{"a */ b", "a * / b"},
		{"bom\ufeffbidi\u202eline\u2028sep\ttab", "bom bidi line sep tab"},
		{"关键词。第二句。", "关键词。"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxDocRunes) + "…"},
	}
	for _, tt := range tests {
		if got := docText(tt.in); got != tt.want {
			t.Errorf("docText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
