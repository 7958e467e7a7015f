package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// quickSchemas are the shapes quick must judge: kiln's own meta-tool
// schemas, a zod-generated draft-07 schema as the npm reference servers
// publish, and nested objects and arrays.
var quickSchemas = []string{
	`{"type":"object","properties":{"code":{"type":"string","minLength":1},"timeout":{"type":"integer","minimum":1},"max_output_size":{"type":"integer","minimum":100},"intent":{"type":"string"}},"required":["code"],"additionalProperties":false}`,
	`{"type":"object","properties":{"task_description":{"type":"string","minLength":1,"maxLength":1000},"steps":{"type":"array","maxItems":10,"items":{"type":"string","minLength":1,"maxLength":300}},"limit":{"type":"integer","minimum":1,"maximum":50,"default":10},"brief":{"type":"boolean","default":true}},"required":["task_description"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tool_name":{"type":"string","minLength":1,"maxLength":300},"detail":{"type":"string","enum":["brief","full"],"default":"brief"}},"required":["tool_name"],"additionalProperties":false}`,
	`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":["integer","null"]},"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]},"minItems":1},"env":{"type":"object","additionalProperties":{"type":"string"}},"any":{}}}`,
	`{"properties":{"x":{"type":"string","format":"uri"}}}`,
	`{"type":"object","properties":{"\ufffd":{"type":"string"}}}`,
}

// quickInstances are tried against every schema: valid and invalid ones,
// escapes, duplicates, numbers quick leaves to the full validator.
var quickInstances = []string{
	`{}`, `{"code":"x"}`, `{"code":""}`, `{"code":"{\"tool\":\"a.b\"}","timeout":5}`, `{"code":"x","timeout":0}`,
	`{"code":"x","timeout":1.0}`, `{"code":"x","timeout":1e3}`, `{"code":"x","extra":1}`, `{"code":5}`,
	`{"task_description":"find files","steps":["a","b"],"limit":50,"brief":false}`, `{"task_description":"x","limit":51}`,
	`{"task_description":"x","steps":[""]}`, `{"task_description":"x","steps":["1","2","3","4","5","6","7","8","9","10","11"]}`,
	`{"tool_name":"a.b","detail":"full"}`, `{"tool_name":"a.b","detail":"fu\u006cl"}`, `{"tool_name":"a.b","detail":"none"}`,
	`{"message":"hi"}`, `{"message":"hi","message":5}`, `{"message":5,"message":"hi"}`, `{"mess\u0061ge":"hi"}`,
	`{"message":"\ud83d\ude00"}`, `{"a":-0.5,"b":null,"tags":[{"k":"v"}],"env":{"A":"1"},"any":[1,{"x":[]}]}`,
	`{"a":"1"}`, `{"b":1.5}`, `{"tags":[]}`, `{"tags":[{"j":1}]}`, `{"env":{"A":1}}`, `{"x":"not a uri"}`,
	`{"x":"https://example.com"}`, ` {"message" : "hi" } `, `[]`, `"str"`, `{"code":"x"`, `{"code":"x"}{}`,
	`{"tool_name":"` + strings.Repeat("é", 300) + `"}`, `{"tool_name":"` + strings.Repeat("é", 301) + `"}`,
	`{"limit":99999999999999999999999,"task_description":"x"}`, `{"a":123456789012345678901234567890}`, "{\"\xff\":1}",
}

func TestQuickNeverAcceptsWhatTheSchemaRefuses(t *testing.T) {
	accepted := 0
	for i, s := range quickSchemas {
		full, q, err := compile("t", []byte(s))
		if err != nil {
			t.Fatalf("schema %d: %v", i, err)
		}
		if q == nil {
			t.Fatalf("schema %d: quick does not judge %s", i, s)
		}
		for _, inst := range quickInstances {
			if !q.valid([]byte(inst)) {
				continue
			}
			accepted++
			if err := validateFull(full, inst); err != nil {
				t.Errorf("schema %d: quick accepts %s, the schema refuses it: %v", i, inst, err)
			}
		}
	}
	if accepted < 10 {
		t.Errorf("quick accepted only %d instances: it is not judging the common cases", accepted)
	}
}

func TestQuickJudgesTheCommonCases(t *testing.T) {
	for _, tc := range []struct{ schema, args string }{
		{quickSchemas[0], `{"code":"{\"tool\":\"everything.echo\",\"arguments\":{\"message\":\"hi\"}}"}`},
		{quickSchemas[1], `{"task_description":"find files","steps":["a","b"],"limit":50,"brief":false}`},
		{quickSchemas[2], `{"tool_name":"a.b","detail":"full"}`},
		{quickSchemas[3], `{"message":"hi"}`},
		{quickSchemas[4], `{"a":-0.5,"b":null,"tags":[{"k":"v"}],"env":{"A":"1"},"any":[1,{"x":[]}]}`},
	} {
		_, q, err := compile("t", []byte(tc.schema))
		if err != nil || q == nil {
			t.Fatalf("compile %s: quick %v, err %v", tc.schema, q, err)
		}
		if !q.valid([]byte(tc.args)) {
			t.Errorf("quick leaves %s to the full validator for %s", tc.args, tc.schema)
		}
	}
}

func TestQuickLeavesUnknownKeywordsToTheFullValidator(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
		`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`,
		`{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
		`{"type":"object","properties":{"a":{"type":"number","minimum":0.5}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"x":{"type":"string","format":"uri"}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`[]`,
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		if quickCompile(doc) != nil {
			t.Errorf("quick claims to judge %s", s)
		}
	}
}

// FuzzQuickAgreesWithFull: whatever quick calls valid, the full validator
// accepts too.
func FuzzQuickAgreesWithFull(f *testing.F) {
	for _, inst := range quickInstances {
		f.Add(inst)
	}
	type compiled struct {
		full *jsonschema.Schema
		q    *quick
	}
	var all []compiled
	for _, s := range quickSchemas {
		full, q, err := compile("t", []byte(s))
		if err != nil || q == nil {
			f.Fatalf("compile %s: %v", s, err)
		}
		all = append(all, compiled{full, q})
	}
	f.Fuzz(func(t *testing.T, inst string) {
		for i, c := range all {
			if c.q.valid([]byte(inst)) {
				if err := validateFull(c.full, inst); err != nil {
					t.Fatalf("schema %d: quick accepts %q, the schema refuses it: %v", i, inst, err)
				}
			}
		}
	})
}

func validateFull(sch *jsonschema.Schema, inst string) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(inst)))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func BenchmarkValidate(b *testing.B) {
	args := []byte(`{"code":"{\"tool\":\"everything.echo\",\"arguments\":{\"message\":\"hi\"}}"}`)
	for _, mode := range []string{"quick", "full"} {
		b.Run(mode, func(b *testing.B) {
			v := New()
			schema := []byte(quickSchemas[0])
			if err := v.Compile("t", schema); err != nil {
				b.Fatal(err)
			}
			if mode == "full" {
				v.entry("t", schema).quick = nil
			}
			for b.Loop() {
				if err := v.Validate("t", schema, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestEscapedRunesCountsAsDecoded(t *testing.T) {
	for _, s := range []string{`a\"b`, `\u00e9x`, `\ud83d\ude00`, `\ud83dx`, `\ud83d\u0041`, `\ude00\ud83d`, "é\xffz", `\\\/\b\f\n\r\t`} {
		var decoded string
		if err := jsonUnmarshalString(`"`+s+`"`, &decoded); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got, want := escapedRunes(s), utf8.RuneCountInString(decoded); got != want {
			t.Errorf("escapedRunes(%s) = %d, want %d", s, got, want)
		}
	}
}

func jsonUnmarshalString(s string, out *string) error { return json.Unmarshal([]byte(s), out) }
