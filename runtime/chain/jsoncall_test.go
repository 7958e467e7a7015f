package chain

import (
	"strings"
	"testing"
)

func TestParseJSONCall(t *testing.T) {
	tests := []struct {
		name, code         string
		wantOK             bool
		wantTool, wantArgs string
		wantErr            string
	}{
		{"canonical", `{"tool": "exa.web_search", "arguments": {"query": "mcp"}}`, true, "exa.web_search", `{"query": "mcp"}`, ""},
		{"whitespace", "\n  {\"tool\":\"a.b\"}\n", true, "a.b", `{}`, ""},
		{"null arguments", `{"tool":"a.b","arguments":null}`, true, "a.b", `{}`, ""},
		{"bare tool name", `{"tool":"echo","arguments":{}}`, true, "echo", `{}`, ""},
		{"extra key", `{"tool":"a.b","args":{}}`, true, "", "", `remove args`},
		{"array arguments", `{"tool":"a.b","arguments":[1]}`, true, "", "", "must be a JSON object"},
		{"empty tool", `{"tool":"","arguments":{}}`, true, "", "", "non-empty string"},
		{"numeric tool", `{"tool":5}`, true, "", "", "non-empty string"},
		{"typescript", `const r = await a.b({x: 1}); return r;`, false, "", "", ""},
		{"js object literal", `{tool: "a.b"}`, false, "", "", ""},
		{"no tool key", `{"query": "x"}`, false, "", "", ""},
		{"array", `[{"tool":"a.b"}]`, false, "", "", ""},
		{"empty", ``, false, "", "", ""},
		{"escaped keys", `{"t\u006fol":"a.b","\u0061rguments":{"x":"\u00e9"}}`, true, "a.b", `{"x":"\u00e9"}`, ""},
		{"escaped tool name", `{"tool":"a.\u0062"}`, true, "a.b", `{}`, ""},
		{"last duplicate wins", `{"tool":"a.b","tool":"c.d","arguments":{"n":1}}`, true, "c.d", `{"n":1}`, ""},
		{"extra keys named once, sorted", `{"z":1,"tool":"a.b","y":2,"z":3}`, true, "", "", `remove y, z`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call, ok, err := parseJSONCall(tc.code)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if ok && (call.Tool != tc.wantTool || string(call.Args) != tc.wantArgs) {
				t.Errorf("call = {%s %s}, want {%s %s}", call.Tool, call.Args, tc.wantTool, tc.wantArgs)
			}
		})
	}
}
