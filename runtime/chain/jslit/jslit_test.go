package jslit

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatNumber(t *testing.T) {
	// Expected strings are what V8 and goja print for String(x).
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1.5, "-1.5"}, {100, "100"},
		{0.1, "0.1"}, {0.30000000000000004, "0.30000000000000004"}, {1e21, "1e+21"}, {1e20, "100000000000000000000"},
		{123456789012345680000, "123456789012345680000"}, {1e-7, "1e-7"}, {0.000001, "0.000001"},
		{1.5e-10, "1.5e-10"}, {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
		{9007199254740993, "9007199254740992"}, {2.5e25, "2.5e+25"}, {123.456, "123.456"},
	}
	for _, tc := range tests {
		if got := FormatNumber(tc.f); got != tc.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestTokenize(t *testing.T) {
	toks, ok := Tokenize("a.b // c\n( 'x\\u0041' , 0x1f /* \n */ -2e3 )")
	if !ok {
		t.Fatal("Tokenize failed")
	}
	type tok = Token
	got := toks
	want := []tok{
		{Ident, "a", 0, false}, {Punct, ".", 0, false}, {Ident, "b", 0, false},
		{Punct, "(", 0, true}, {String, `"xA"`, 0, false}, {Punct, ",", 0, false},
		{Number, "", 31, false}, {Punct, "-", 0, true}, {Number, "", 2000, false},
		{Punct, ")", 0, false}, {EOF, "", 0, false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("tokens (-want +got):\n%s", d)
	}
	for _, bad := range []string{"`t`", "a => b", "a == b", "x++", "...", "1n", "08", "'unterminated", "/* open", "\\u0061", "é", "'\\1'", "a?.b", "#x"} {
		if _, ok := Tokenize(bad); ok {
			t.Errorf("Tokenize(%q) accepted it", bad)
		}
	}
}

func TestReencode(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[1.0,2e0,-0],"2":true,"1":null}`, `{"1":null,"2":true,"b":1,"a":[1,2,0]}`},
		{`{"x":1,"x":2}`, `{"x":2}`},
		{`{"__proto__":{"a":1}}`, `{"__proto__":{"a":1}}`},
		{`[1e400, -1e400, "\u00e9\ud800"]`, `[null,null,"é\ud800"]`},
		{` "s" `, `"s"`},
	}
	for _, tc := range tests {
		got, ok := Reencode([]byte(tc.in))
		if !ok || string(got) != tc.want {
			t.Errorf("Reencode(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{`{a:1}`, `[1,]`, `'s'`, `+1`, `{"a":1} x`} {
		if got, ok := Reencode([]byte(bad)); ok {
			t.Errorf("Reencode(%s) = %s, want failure", bad, got)
		}
	}
}
