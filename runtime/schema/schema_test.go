package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"query":{"type":"string","pattern":"^(?!secret).+$"},
		"num":{"type":"integer","minimum":1}},
		"required":["query"],"additionalProperties":false}`)
	tests := []struct {
		name, args string
		want       []string // substrings of problems; nil means valid
	}{
		{"valid", `{"query":"mcp","num":3}`, nil},
		{"missing required", `{"num":3}`, []string{"missing property 'query'"}},
		{"wrong type", `{"query":5}`, []string{"/query", "want string"}},
		{"minimum", `{"query":"x","num":0}`, []string{"/num", "minimum"}},
		{"ecma lookahead rejects", `{"query":"secret-x"}`, []string{"/query", "does not match pattern"}},
		{"unknown key", `{"query":"x","extra":1}`, []string{"additional properties 'extra'"}},
		{"not an object", `[1]`, []string{"expected an object"}},
		{"empty means {}", ``, []string{"missing property 'query'"}},
		{"two problems at once", `{"num":"x"}`, []string{"query", "/num"}},
	}
	v := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate("b.t", schema, []byte(tc.args))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgs) {
				t.Fatalf("Validate() = %v, want ErrInvalidArgs", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestExternalRefsBlocked(t *testing.T) {
	v := New()
	for _, ref := range []string{"file:///etc/passwd", "http://127.0.0.1:1/x.json"} {
		schema := []byte(`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`)
		err := v.Compile("b."+ref, schema)
		if err == nil || !strings.Contains(err.Error(), "disabled") {
			t.Errorf("Compile with $ref %s = %v, want refusal", ref, err)
		}
		if strings.Contains(errString(err), "root:") {
			t.Errorf("error leaks file contents: %v", err)
		}
		// An uncompilable schema does not block calls.
		if err := v.Validate("b."+ref, schema, []byte(`{"a":1}`)); err != nil {
			t.Errorf("Validate after failed compile = %v, want nil", err)
		}
	}
}

func TestCatastrophicPatternIsBounded(t *testing.T) {
	v := New()
	schema := []byte(`{"type":"object","properties":{"s":{"type":"string","pattern":"^(a+)+$"}}}`)
	// With the match timeout the match reports "no match" instead of
	// running for minutes; the call is rejected, not hung.
	err := v.Validate("b.re", schema, []byte(`{"s":"`+strings.Repeat("a", 40)+`!"}`))
	if !errors.Is(err, ErrInvalidArgs) {
		t.Fatalf("Validate() = %v, want ErrInvalidArgs", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestChangedSchemaIsCompiledAnew: a tool whose schema changes under the
// same key (live tools served under drift: warn) is validated against the
// new schema, not the first one compiled.
func TestChangedSchemaIsCompiledAnew(t *testing.T) {
	v := New()
	old := []byte(`{"type":"object","properties":{"query":{"type":"string"}},"additionalProperties":false}`)
	live := []byte(`{"type":"object","properties":{"query":{"type":"string"},"note":{"type":"string"}},"additionalProperties":false}`)
	args := []byte(`{"query":"x","note":"k"}`)
	if err := v.Validate("memory.search_nodes", old, args); err == nil {
		t.Fatal("the old schema accepts note")
	}
	if err := v.Validate("memory.search_nodes", live, args); err != nil {
		t.Errorf("the changed schema is not used: %v", err)
	}
	if err := v.Validate("memory.search_nodes", old, args); err == nil {
		t.Error("the schema changed back is not used")
	}
}
