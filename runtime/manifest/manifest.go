package manifest

import (
	"github.com/kilnmcp/kiln/runtime/atomicfile"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Version is the manifest format this build reads and writes. Bump it when a
// field changes meaning; Decode rejects every other value.
const Version = 1

// ErrVersion reports a manifest written by an incompatible kiln-gen.
var ErrVersion = errors.New("unsupported manifest version")

// Manifest is everything recorded about one backend.
type Manifest struct {
	Version           int                `json:"version"`
	Backend           string             `json:"backend"`
	Transport         string             `json:"transport"`
	Server            ServerInfo         `json:"server"`
	ProtocolVersion   string             `json:"protocolVersion"`
	Instructions      string             `json:"instructions,omitempty"`
	Tools             []Tool             `json:"tools"`
	Resources         []Resource         `json:"resources"`
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	Prompts           []Prompt           `json:"prompts"`
}

// ServerInfo is the implementation block a backend announced.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Title   string `json:"title,omitempty"`
}

// Tool is one backend tool exactly as the backend published it. Schemas stay
// raw JSON so that nothing a backend declares is lost on the way to the model.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Execution is the tool's execution block, e.g. {"taskSupport":
	// "required"} for tools that only run as MCP tasks.
	Execution json.RawMessage `json:"execution,omitempty"`
	// Icons are the tool's icons (src, mimeType, sizes, theme), shown by
	// clients when the tool is exposed directly.
	Icons json.RawMessage `json:"icons,omitempty"`
}

// Resource is a static resource a backend lists. Annotations, icons and
// _meta stay raw JSON so a client sees them as the backend sent them.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate is a parameterised resource a backend lists; URITemplate
// is an RFC 6570 template.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Prompt is a prompt a backend lists, under the backend's own name.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       json.RawMessage  `json:"icons,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Encode returns the canonical bytes of m: lists sorted, every object's keys
// sorted (including inside schemas), numbers kept as written, two-space
// indent and a trailing newline.
func Encode(m *Manifest) ([]byte, error) {
	c := *m
	c.Version = Version
	c.Tools = slices.Clone(m.Tools)
	slices.SortFunc(c.Tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	c.Resources = slices.Clone(m.Resources)
	slices.SortFunc(c.Resources, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	c.ResourceTemplates = slices.Clone(m.ResourceTemplates)
	slices.SortFunc(c.ResourceTemplates, func(a, b ResourceTemplate) int {
		return strings.Compare(a.URITemplate, b.URITemplate)
	})
	c.Prompts = slices.Clone(m.Prompts)
	slices.SortFunc(c.Prompts, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
	if c.Tools == nil {
		c.Tools = []Tool{}
	}
	if c.Resources == nil {
		c.Resources = []Resource{}
	}
	if c.ResourceTemplates == nil {
		c.ResourceTemplates = []ResourceTemplate{}
	}
	if c.Prompts == nil {
		c.Prompts = []Prompt{}
	}
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode manifest %q: %w", m.Backend, err)
	}
	return Canonical(raw)
}

// Canonical re-encodes any JSON document with sorted object keys, numbers as
// written, HTML characters unescaped, two-space indent and a trailing newline.
func Canonical(raw []byte) ([]byte, error) { return reencode(raw, "  ") }

// Compact re-encodes a JSON document canonically on one line. Emit uses it
// for schemas embedded in generated code.
func Compact(raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out, err := reencode(raw, "")
	return bytes.TrimRight(out, "\n"), err
}

func reencode(raw []byte, indent string) ([]byte, error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeOrdered decodes with json.Number so that 1.0 and 10000000000000001
// survive a round trip; encoding/json sorts map keys on output.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: trailing data after the document")
	}
	return v, nil
}

// Decode parses a manifest and checks its version and required fields.
func Decode(raw []byte) (*Manifest, error) {
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if probe.Version == nil {
		return nil, fmt.Errorf("%w: the \"version\" field is missing (expected %d)", ErrVersion, Version)
	}
	if *probe.Version != Version {
		return nil, fmt.Errorf("%w: got %d, this kiln-gen reads %d; re-record with `make generate`", ErrVersion, *probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("invalid manifest: %w", err)
	}
	if m.Backend == "" {
		return nil, errors.New("invalid manifest: \"backend\" is empty")
	}
	seen := make(map[string]bool, len(m.Tools))
	for i, t := range m.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("invalid manifest: tools[%d].name is empty", i)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("invalid manifest: tool %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if err := CheckInputSchema(t); err != nil {
			return nil, fmt.Errorf("invalid manifest: %w; fix the backend and re-record it with `kiln-gen record`", err)
		}
	}
	return &m, nil
}

// ErrInputSchema matches every inputSchema CheckInputSchema refuses.
var ErrInputSchema = errors.New("invalid inputSchema")

// CheckInputSchema checks that a tool's inputSchema is what MCP requires: a
// JSON Schema object for an object of arguments. Anything else (a string, a
// list, an object schema of "type": "string") cannot describe named
// arguments: emit would generate nonsense and every call would be
// validated against the wrong shape. The record, the emit and the live
// tool lists of kiln serve all pass through it.
func CheckInputSchema(t Tool) error {
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		return fmt.Errorf("tool %q: %w: missing; a tool needs an object schema such as {\"type\":\"object\",\"properties\":{}}", t.Name, ErrInputSchema)
	}
	var schema any
	if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
		return fmt.Errorf("tool %q: %w: not JSON (%v)", t.Name, ErrInputSchema, err)
	}
	obj, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("tool %q: %w: it is %s, not an object; a tool's inputSchema is an object schema such as {\"type\":\"object\",\"properties\":{}}", t.Name, ErrInputSchema, jsonKind(schema))
	}
	if typ, present := obj["type"]; present && typ != "object" {
		got := jsonKind(typ)
		if s, ok := typ.(string); ok && len(s) <= 40 {
			got = strconv.Quote(s)
		}
		return fmt.Errorf("tool %q: %w: \"type\" is %s; a tool's arguments are an object, so the type must be \"object\"", t.Name, ErrInputSchema, got)
	}
	if props, present := obj["properties"]; present {
		if _, ok := props.(map[string]any); !ok {
			return fmt.Errorf("tool %q: %w: \"properties\" is %s; it maps each argument's name to its schema", t.Name, ErrInputSchema, jsonKind(props))
		}
	}
	return nil
}

// jsonKind names the JSON type of a decoded value for an error message.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "a list"
	}
	return "an object"
}

// ReadDir loads every *.json manifest in dir, sorted by backend name. A file
// whose name does not match its backend field is an error: the file name is
// what reviewers see.
func ReadDir(dir string) ([]*Manifest, error) {
	// Glob finds nothing in a missing folder; a mistyped path must not
	// read as "no backends".
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("manifests folder: %w; run `kiln-gen record` first or pass --manifests", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("manifests folder %s is a file, not a folder", dir)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	out := make([]*Manifest, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		m, err := Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".json"); m.Backend != want {
			return nil, fmt.Errorf("%s: backend is %q but the file is named for %q; rename the file or re-record", p, m.Backend, want)
		}
		out = append(out, m)
	}
	return out, nil
}

// WriteFile writes m canonically to dir/<backend>.json through a temporary
// file and a rename, so a crash never leaves half a manifest behind.
func WriteFile(dir string, m *Manifest) (string, error) {
	raw, err := Encode(m)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, m.Backend+".json")
	return path, atomicfile.Write(path, raw)
}

// Int64 returns a pointer to v: generated manifests write resource sizes
// with it.
func Int64(v int64) *int64 { return &v }
