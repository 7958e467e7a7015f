package scrub

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// expectJSON checks that sc turns in into want and that valid JSON stays
// valid.
func expectJSON(t *testing.T, sc *Scrubber, in, want string) {
	t.Helper()
	got := string(sc.JSON(json.RawMessage(in)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON(%s) (-want +got):\n%s", in, diff)
	}
	if json.Valid([]byte(in)) && !json.Valid([]byte(got)) {
		t.Errorf("JSON(%s) = %s: not valid JSON", in, got)
	}
}

func TestJSON(t *testing.T) {
	sc := New(Options{Values: []Value{{Name: "ODD", Value: `pa"ss&word<1`}}})
	tests := []struct{ name, in, want string }{
		{"clean kept byte for byte", `{ "b": 1.50e+3, "a": [true, null, false], "s": "x" }`, `{ "b": 1.50e+3, "a": [true, null, false], "s": "x" }`},
		{"string value", `{"log":"using ` + fakeGH + `"}`, `{"log":"using [REDACTED:github-token]"}`},
		{"keys left alone", `{"` + fakeGH + `":1}`, `{"` + fakeGH + `":1}`},
		{"key context", `{"db":{"password":"hunter22","port":5432}}`, `{"db":{"password":"[REDACTED:assignment]","port":5432}}`},
		{"key context weak", `{"apiKey": "Zq81Kd02Lm93Xn84", "sortKey": "Zq81Kd02Lm93Xn84"}`, `{"apiKey": "[REDACTED:assignment]", "sortKey": "Zq81Kd02Lm93Xn84"}`},
		{"key context authorization", `{"Authorization":"Bearer abcdefgh"}`, `{"Authorization":"Bearer [REDACTED:bearer-token]"}`},
		{"array under secret name untouched", `{"password":["a","b"]}`, `{"password":["a","b"]}`},
		{"key context not across values", `{"password":1,"note":"hello world"}`, `{"password":1,"note":"hello world"}`},
		{"escapes decoded", `["line\nAPI_KEY=abc123def456\u0020done"]`, `["line\nAPI_KEY=[REDACTED:assignment] done"]`},
		{"unicode escape hides prefix", `"\u0067hp_` + fakeGH[4:] + `"`, `"[REDACTED:github-token]"`},
		{"escaped known value", `{"v":"pa\"ss\u0026word\u003c1"}`, `{"v":"[REDACTED:env:ODD]"}`},
		{"pem with escaped newlines", `{"k":"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}`, `{"k":"[REDACTED:private-key]\n"}`},
		{"control bytes re-escaped", `{"a":"\u0001 ` + fakeJWT + `\t\"q\""}`, `{"a":"\u0001 [REDACTED:jwt]\t\"q\""}`},
		{"top-level string", `"` + fakeJWT + `"`, `"[REDACTED:jwt]"`},
		{"invalid json as text", `{password: "hunter22", note: x}`, `{password: "[REDACTED:assignment]", note: x}`},
		{"truncated json as text", `{"a": "` + fakeGH, `{"a": "[REDACTED:github-token]`},
		{"bare text", `not json ` + fakeGH, `not json [REDACTED:github-token]`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectJSON(t, sc, tt.in, tt.want) })
	}
}

func TestJSONUnchangedReturnsInput(t *testing.T) {
	sc := New(Options{})
	in := json.RawMessage(`{"a":"plain","b":[1,2,3]}`)
	out := sc.JSON(in)
	if &out[0] != &in[0] {
		t.Error("JSON copied a document it did not change")
	}
}

func TestUnescape(t *testing.T) {
	for _, in := range []string{
		`plain`, `a\"b\\c\/d`, `\b\f\n\r\t`, `\u00e9\u4e2d`, `\ud83d\ude00`, `\ud83d`, `\ude00x`, `\u0000`,
	} {
		var want string
		if err := json.Unmarshal([]byte(`"`+in+`"`), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := jsontext.Unescape(in)
		if !ok || got != want {
			t.Errorf("unescape(%q) = %q, %v; want %q", in, got, ok, want)
		}
		var back string
		if err := json.Unmarshal(jsontext.AppendString(nil, got, 0), &back); err != nil || back != got {
			t.Errorf("AppendString(%q) round trip = %q, %v", got, back, err)
		}
	}
	for _, bad := range []string{`\x`, `\u12`, `\uZZZZ`, `trailing\`} {
		if _, ok := jsontext.Unescape(bad); ok {
			t.Errorf("unescape(%q) ok, want failure", bad)
		}
	}
}

// TestJSONExceptKeepsTopLevelMembers: JSONExcept leaves the named members
// of the document itself alone, and scrubs the same name deeper down.
func TestJSONExceptKeepsTopLevelMembers(t *testing.T) {
	sc := New(Options{})
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	raw := `{"requestState":"` + secret + `","q":{"requestState":"` + secret + `","text":"` + secret + `"}}`
	got := string(sc.JSONExcept(json.RawMessage(raw), "requestState"))
	if want := `{"requestState":"` + secret + `","q":`; !strings.HasPrefix(got, want) {
		t.Errorf("top-level requestState changed: %s", got)
	}
	if strings.Count(got, secret) != 1 {
		t.Errorf("nested values kept the secret: %s", got)
	}
}
