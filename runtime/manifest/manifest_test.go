package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeIsCanonical(t *testing.T) {
	a := &Manifest{Backend: "b", Transport: "stdio", Tools: []Tool{
		{Name: "z", InputSchema: json.RawMessage(`{"type":"object","properties":{"y":{"type":"number","minimum":1.0},"x":{}}}`)},
		{Name: "a", Description: "<b>&", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}}
	b := &Manifest{Backend: "b", Transport: "stdio", Tools: []Tool{a.Tools[1], {
		Name: "z", InputSchema: json.RawMessage(`{"properties":{"x":{},"y":{"minimum":1.0,"type":"number"}},"type":"object"}`),
	}}}
	ea, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := Encode(b)
	if diff := cmp.Diff(string(ea), string(eb)); diff != "" {
		t.Errorf("same manifest in another order encodes differently (-a +b):\n%s", diff)
	}
	for _, want := range []string{`"minimum": 1.0`, `"description": "<b>&"`, `"version": 1`} {
		if !strings.Contains(string(ea), want) {
			t.Errorf("encoding lacks %s:\n%s", want, ea)
		}
	}
	if !strings.HasSuffix(string(ea), "}\n") || strings.Index(string(ea), `"name": "a"`) > strings.Index(string(ea), `"name": "z"`) {
		t.Errorf("tools not sorted or no trailing newline:\n%s", ea)
	}
	back, err := Decode(ea)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Encode(back)
	if string(again) != string(ea) {
		t.Error("Encode(Decode(x)) != x")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no version", `{"backend":"b"}`, `"version" field is missing`},
		{"future version", `{"version":2,"backend":"b"}`, "got 2"},
		{"unknown field", `{"version":1,"backend":"b","tools":[],"extra":1}`, "unknown field"},
		{"empty backend", `{"version":1,"backend":""}`, `"backend" is empty`},
		{"duplicate tool", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{}},{"name":"t","inputSchema":{}}]}`, "appears twice"},
		{"no schema", `{"version":1,"backend":"b","tools":[{"name":"t"}]}`, `tool "t": invalid inputSchema: missing`},
		{"null schema", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":null}]}`, `tool "t": invalid inputSchema: it is null, not an object`},
		{"string schema", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":"object"}]}`, `tool "t": invalid inputSchema: it is a string, not an object; a tool's inputSchema is an object schema such as {"type":"object","properties":{}}`},
		{"list schema", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":[]}]}`, "it is a list"},
		{"string type", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{"type":"string"}}]}`, `tool "t": invalid inputSchema: "type" is "string"; a tool's arguments are an object, so the type must be "object"`},
		{"type list", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{"type":["object","null"]}}]}`, `"type" is a list`},
		{"properties not an object", `{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{"type":"object","properties":[]}}]}`, `"properties" is a list`},
		{"not json", `{`, "invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want mention of %q", err, tc.want)
			}
		})
	}
	if _, err := Decode([]byte(`{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":1}]}`)); !errors.Is(err, ErrInputSchema) ||
		!strings.Contains(err.Error(), "re-record") {
		t.Errorf("schema error does not wrap ErrInputSchema or lacks the fix: %v", err)
	}
	if _, err := Decode([]byte(`{"version":9,"backend":"b"}`)); !errors.Is(err, ErrVersion) {
		t.Errorf("version error does not wrap ErrVersion: %v", err)
	}
}

func TestReadDirChecksFileNames(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteFile(dir, &Manifest{Backend: "good"}); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadDir(dir)
	if err != nil || len(ms) != 1 || ms[0].Backend != "good" {
		t.Fatalf("ReadDir = %v, %v", ms, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "good.json"))
	if err := os.WriteFile(filepath.Join(dir, "renamed.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), `named for "renamed"`) {
		t.Errorf("ReadDir with a mismatched file name = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestReadDirNamesFileAndTool: a manifest with a non-object inputSchema is
// refused with its file, the tool and the fix.
func TestReadDirNamesFileAndTool(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.json")
	raw := `{"version":1,"backend":"b","transport":"stdio","tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":{"type":"string"}}]}`
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadDir(dir)
	for _, want := range []string{path, `tool "bad"`, `"type" is "string"`, "kiln-gen record"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadDir = %v, want mention of %q", err, want)
		}
	}
}

func TestCheckInputSchemaAccepts(t *testing.T) {
	for _, schema := range []string{`{"type":"object"}`, `{}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`} {
		if err := CheckInputSchema(Tool{Name: "t", InputSchema: json.RawMessage(schema)}); err != nil {
			t.Errorf("CheckInputSchema(%s) = %v, want nil", schema, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":"object"}]}`))
	f.Add([]byte(`{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{"type":"string","properties":[]}}]}`))
	f.Add([]byte(`{"version":1,"backend":"b","transport":"stdio","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"version":1,"backend":"b","tools":[{"name":"t","inputSchema":{"a":[1,2.50,{"b":null}]}}],"prompts":[{"name":"p"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Decode(raw)
		if err != nil {
			return
		}
		enc, err := Encode(m)
		if err != nil {
			return // a decoded manifest may hold schemas Encode rejects as non-JSON
		}
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(m)) failed: %v\n%s", err, enc)
		}
		enc2, err := Encode(m2)
		if err != nil || string(enc2) != string(enc) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}
