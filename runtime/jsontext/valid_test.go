package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `null`, ` {"a" : [1, "b\"\\\/\b\f\n\r\t\u00e9", {}] } `,
	`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `"\x"`, `"\u12"`, `"a` + "\n" + `b"`, `{"a"}`, `{"a":}`, `{,}`, `[1,]`,
	`[1 2]`, `{"a":1,}`, `tru`, `nul`, `"` + "\xff" + `"`, `{} {}`, ``, ` `, `{"a":1`, `[`, `"\uD83D\uDE00"`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + `1` + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + `1` + strings.Repeat("}", maxDepth+1),
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.40q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases[:len(validCases)-4] {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"kiln-bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"call_tool_chain","arguments":{"code":"{\"tool\":\"everything.echo\",\"arguments\":{\"message\":\"hi\"}}"}}}`)
	b.Run("jsontext", func(b *testing.B) {
		for b.Loop() {
			Valid(line)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(line)
		}
	})
}
