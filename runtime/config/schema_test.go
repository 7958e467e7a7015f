package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

const schemaURL = "https://github.com/kilnmcp/kiln/runtime/config/schema/v1.json"

// noLoader refuses every external $ref: the schema must be self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, errors.New("external ref " + url) }

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// yamlInstance converts YAML text to the JSON value the schema sees.
func yamlInstance(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// examples lists every example config: testdata/*.yaml and the
// repository's kiln.yaml once it exists.
func examples(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("../../kiln.yaml"); err == nil {
		paths = append(paths, "../../kiln.yaml")
	}
	if len(paths) < 3 {
		t.Fatalf("found %d examples, want at least 3", len(paths))
	}
	return paths
}

func TestExamplesMatchSchema(t *testing.T) {
	sch := compileSchema(t)
	for _, path := range examples(t) {
		t.Run(path, func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlInstance(t, text)); err != nil {
				t.Errorf("schema: %v", err)
			}
			if _, err := LoadWith(path, LoadOptions{Getenv: env(nil)}); err != nil {
				t.Errorf("loader: %v", err)
			}
		})
	}
}

// TestSchemaMatchesLoader keeps the schema's vocabulary equal to the
// loader's, so neither can learn a key or a value the other rejects.
func TestSchemaMatchesLoader(t *testing.T) {
	var s struct {
		Properties map[string]json.RawMessage
		Gateway    struct {
			Properties map[string]struct {
				AnyOf      []struct{ Enum []string }
				Properties map[string]json.RawMessage
			}
		}
		Backends struct {
			PropertyNames struct {
				Pattern string
				Not     struct{ Enum []string }
			}
		}
		Backend struct {
			Properties map[string]struct {
				AnyOf []struct{ Enum []string }
			}
		}
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatal(err)
	}
	sub := func(raw json.RawMessage, v any) {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	sub(s.Properties["gateway"], &s.Gateway)
	sub(s.Properties["backends"], &s.Backends)
	var defs struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	sub(Schema(), &defs)
	sub(defs.Defs["backend"], &s.Backend)

	keys := func(m any) []string {
		var out []string
		switch m := m.(type) {
		case map[string]json.RawMessage:
			for k := range m {
				out = append(out, k)
			}
		case map[string]struct{ AnyOf []struct{ Enum []string } }:
			for k := range m {
				out = append(out, k)
			}
		case map[string]struct {
			AnyOf      []struct{ Enum []string }
			Properties map[string]json.RawMessage
		}:
			for k := range m {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	checks := []struct {
		name      string
		schema    any
		loaderSet []string
	}{
		{"top-level keys", keys(s.Properties), topKeys},
		{"gateway keys", keys(s.Gateway.Properties), gatewayKeys},
		{"sandbox keys", keys(s.Gateway.Properties["sandbox"].Properties), sectionKeys["gateway.sandbox"]},
		{"output keys", keys(s.Gateway.Properties["output"].Properties), sectionKeys["gateway.output"]},
		{"health keys", keys(s.Gateway.Properties["health"].Properties), sectionKeys["gateway.health"]},
		{"registration keys", keys(s.Gateway.Properties["registration"].Properties), sectionKeys["gateway.registration"]},
		{"http keys", keys(s.Gateway.Properties["http"].Properties), sectionKeys["gateway.http"]},
		{"semantic keys", keys(s.Gateway.Properties["semantic"].Properties), sectionKeys["gateway.semantic"]},
		{"backend keys", keys(s.Backend.Properties), backendKeys},
		{"transports", s.Backend.Properties["transport"].AnyOf[0].Enum, transports},
		{"log levels", s.Gateway.Properties["log_level"].AnyOf[0].Enum, logLevels},
		{"reserved names", s.Backends.PropertyNames.Not.Enum, reservedNames},
		{"name pattern", []string{s.Backends.PropertyNames.Pattern}, []string{nameRE.String()}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(sorted(c.loaderSet), sorted(c.schema.([]string))); diff != "" {
			t.Errorf("%s (-loader +schema):\n%s", c.name, diff)
		}
	}
}

// TestSchemaRejectsWhatLoaderRejects covers the problems a schema can
// express; the loader alone judges the rest (duplicates, URLs, variables).
func TestSchemaRejectsWhatLoaderRejects(t *testing.T) {
	sch := compileSchema(t)
	const stdio = "version: 1\nbackends:\n  a:\n"
	tests := []struct{ name, yaml string }{
		{"missing version", "backends: {}\n"},
		{"version 2", "version: 2\n"},
		{"unknown top key", "version: 1\nservers: {}\n"},
		{"unknown gateway key", "version: 1\ngateway: {colour: blue}\n"},
		{"unknown backend key", stdio + "    comand: x\n"},
		{"unknown transport", stdio + "    transport: grpc\n    command: x\n"},
		{"stdio without command", stdio + "    transport: stdio\n"},
		{"no transport, no command", stdio + "    timeout: 5s\n"},
		{"http without url", stdio + "    transport: http\n"},
		{"env on http", stdio + "    transport: http\n    url: http://a.test\n    env: {A: b}\n"},
		{"url on stdio", stdio + "    command: x\n    url: http://a.test\n"},
		{"relative url", stdio + "    transport: sse\n    url: a.test/sse\n"},
		{"invalid name", "version: 1\nbackends:\n  GitHub: {command: x}\n"},
		{"reserved name", "version: 1\nbackends:\n  tool_info: {command: x}\n"},
		{"duration without unit", stdio + "    command: x\n    timeout: 30\n"},
		{"enabled yes", stdio + "    command: x\n    enabled: yes\n"},
		{"max output zero", "version: 1\ngateway: {max_output_size: 0}\n"},
		{"bad log level", "version: 1\ngateway: {log_level: loud}\n"},
		{"bad header name", stdio + "    transport: http\n    url: http://a.test\n    headers: {\"A B\": x}\n"},
		{"empty backend", stdio},
		{"unknown sandbox key", "version: 1\ngateway: {sandbox: {memroy: 1MiB}}\n"},
		{"unknown output key", "version: 1\ngateway: {output: {footer: false}}\n"},
		{"sandbox is a value", "version: 1\ngateway: {sandbox: 5}\n"},
		{"bad size", "version: 1\ngateway: {sandbox: {memory: 50 potatoes}}\n"},
		{"negative size", "version: 1\ngateway: {sandbox: {memory: -5}}\n"},
		{"zero max calls", "version: 1\ngateway: {sandbox: {max_calls: 0}}\n"},
		{"negative queue wait", "version: 1\ngateway: {sandbox: {queue_wait: -1s}}\n"},
		{"queue wait without unit", "version: 1\ngateway: {sandbox: {queue_wait: 2}}\n"},
		{"output flag yes", "version: 1\ngateway: {output: {size_footer: yes}}\n"},
		{"zero threshold", "version: 1\ngateway: {output: {truncate_at: 0}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := loadYAML(t, tt.yaml, nil, ""); !errors.Is(err, ErrInvalid) {
				t.Errorf("loader: error = %v, want ErrInvalid", err)
			}
			if err := sch.Validate(yamlInstance(t, []byte(tt.yaml))); err == nil {
				t.Errorf("schema accepted it")
			}
		})
	}
}
