package jsontext

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestAppendString(t *testing.T) {
	cases := []struct {
		in    string
		flags Flags
		want  string
	}{
		{"", 0, `""`},
		{"plain", 0, `"plain"`},
		{`q"b\s`, 0, `"q\"b\\s"`},
		{"<a&b>", 0, `"<a&b>"`},
		{"\x00\x1f\n\r\t", 0, `"\u0000\u001f\n\r\t"`},
		{"\b\f", 0, `"\u0008\u000c"`},
		{"\b\f", ShortControl, `"\b\f"`},
		{"é日👩\u2028", 0, "\"é日👩\u2028\""},
		{"bad\xffutf8", 0, "\"bad\xffutf8\""},
		{"bad\xffutf8", ValidUTF8, `"bad\ufffdutf8"`},
		{"é\xe6\x97x", ValidUTF8, `"é\ufffd\ufffdx"`},
		{"\b\xff", ShortControl | ValidUTF8, `"\b\ufffd"`},
	}
	for _, c := range cases {
		if got := string(AppendString([]byte("x"), c.in, c.flags)); got != "x"+c.want {
			t.Errorf("AppendString(%q, %b) = %s, want x%s", c.in, c.flags, got, c.want)
		}
	}
}

// TestAppendStringRoundTrip checks that encoding/json reads back what was
// written, and that with ValidUTF8 it reads what encoding/json itself
// would have made of the input.
func TestAppendStringRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a&b>", "\x00\x1f\n\r\t\b\f", "é日👩\u2028", "bad\xffutf8", "\xe6\x97"} {
		for _, f := range []Flags{ValidUTF8, ValidUTF8 | ShortControl} {
			got := AppendString(nil, s, f)
			var back string
			if err := json.Unmarshal(got, &back); err != nil {
				t.Errorf("%q encodes to invalid JSON %s: %v", s, got, err)
				continue
			}
			if want := strings.ToValidUTF8(s, "\ufffd"); back != want && back != strings.ToValidUTF8(s, "\ufffd\ufffd") {
				t.Errorf("%q round trip = %q", s, back)
			}
		}
	}
}

func TestStringEnd(t *testing.T) {
	cases := []struct {
		doc  string
		i    int
		end  int
		open bool
	}{
		{`"ab"`, 0, 4, false},
		{`x "ab" y`, 2, 6, false},
		{`"a\"b"`, 0, 6, false},
		{`"a\\"b"`, 0, 5, false},
		{`"a\\\"b"`, 0, 8, false},
		{`"\u0022"`, 0, 8, false},
		{`"ab`, 0, 3, true},
		{`"ab\"`, 0, 5, true},
		{`"ab\`, 0, 4, true},
	}
	for _, c := range cases {
		end, ok := StringEnd(c.doc, c.i)
		if end != c.end || ok == c.open {
			t.Errorf("StringEnd(%q, %d) = %d, %v; want %d, %v", c.doc, c.i, end, ok, c.end, !c.open)
		}
	}
}

func TestSkipSpace(t *testing.T) {
	for _, c := range []struct {
		s    string
		i, j int
	}{{"", 0, 0}, {"a", 0, 0}, {" \t\r\nx", 0, 4}, {"x  ", 1, 3}, {"\v", 0, 0}} {
		if got := SkipSpace(c.s, c.i); got != c.j {
			t.Errorf("SkipSpace(%q, %d) = %d, want %d", c.s, c.i, got, c.j)
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	ascii := strings.Repeat(`{"id": 12, "name": "widget", "tags": ["a", "b"]}`+"\n", 200)
	mixed := strings.Repeat("日本語のテキスト é and \"quotes\"\t", 200)
	for _, c := range []struct {
		name string
		s    string
		f    Flags
	}{{"ascii", ascii, 0}, {"ascii/valid", ascii, ValidUTF8}, {"mixed", mixed, 0}, {"mixed/valid", mixed, ValidUTF8}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.s)))
			buf := make([]byte, 0, 2*len(c.s))
			for b.Loop() {
				buf = AppendString(buf[:0], c.s, c.f)
			}
		})
	}
}

func BenchmarkStringEnd(b *testing.B) {
	doc := `"` + strings.Repeat(`plain text with an \"escape\" now and then `, 100) + `"`
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if end, ok := StringEnd(doc, 0); !ok || end != len(doc) {
			b.Fatal(end, ok)
		}
	}
}

func TestDepth(t *testing.T) {
	for _, c := range []struct {
		s          string
		stop, want int
	}{
		{`1`, 0, 0},
		{`{"a":[1,{"b":[]}]}`, 0, 4},
		{`["[[[", "\"[[[", {}]`, 0, 2},
		{`"unclosed [[[`, 0, 0},
		{`]]][`, 0, 0},
		{strings.Repeat("[", 100), 0, 100},
		{strings.Repeat("[", 100), 10, 11},
		{`[[]]`, 10, 2},
	} {
		if got := Depth(c.s, c.stop); got != c.want {
			t.Errorf("Depth(%q, %d) = %d, want %d", c.s, c.stop, got, c.want)
		}
	}
}

func TestMembers(t *testing.T) {
	doc := `{ "a" : 1 , "b\"c":{"x":[1,"]}",{}]}, "d":"s\\","e":true,"f":null,"g":-1.5e3 }`
	var got []string
	for k, v := range Members(doc) {
		got = append(got, k+"="+v)
	}
	want := []string{`"a"=1`, `"b\"c"={"x":[1,"]}",{}]}`, `"d"="s\\"`, `"e"=true`, `"f"=null`, `"g"=-1.5e3`}
	if !slices.Equal(got, want) {
		t.Errorf("Members = %q, want %q", got, want)
	}
	for range Members(`{}`) {
		t.Error("a member in {}")
	}
}

// FuzzMembers: the members Members finds, put back together, are the
// object it was given.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a" : [1,{"b":"}"}] , "c":"\""}`, `{"k":{"n":{"m":[[],{}]}},"z":-0.1e+5}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want map[string]any
		if !json.Valid([]byte(s)) || len(s) == 0 || s[0] != '{' || json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		var b strings.Builder
		b.WriteByte('{')
		for k, v := range Members(s) {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(k + ":" + v)
		}
		b.WriteByte('}')
		var got map[string]any
		if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
			t.Fatalf("members of %q rebuilt as %q: %v", s, b.String(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("members of %q rebuilt as %q", s, b.String())
		}
	})
}

// FuzzDecodeString: every JSON string decodes as encoding/json decodes it.
func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`"a\"b"`, `"\u00e9\n"`, `"\ud83d\ude00"`, "\"\xff\\t\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want string
		if json.Unmarshal([]byte(raw), &want) != nil {
			return
		}
		raw = strings.TrimSpace(raw)
		if got := DecodeString(raw); got != want {
			t.Fatalf("DecodeString(%q) = %q, encoding/json %q", raw, got, want)
		}
	})
}

func TestDecodeStringAsTheDecoder(t *testing.T) {
	for _, raw := range []string{`"abc"`, `"a\"b"`, "\"\x83\"", "\"é\xffz\"", `"\u00e9"`, `""`,
		`"{\"tool\":\"a.b\",\"arguments\":{\"x\":\"l1\\nl2\"}}"`, `"\b\f\n\r\t\/\\"`, `"\u0000\u001F\uFFFF\u00E9"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, "\"\\n\xff\""} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if got := DecodeString(raw); got != want {
			t.Errorf("DecodeString(%q) = %q, encoding/json %q", raw, got, want)
		}
	}
}
