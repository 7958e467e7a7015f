package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	vars := env(map[string]string{"A": "a", "EMPTY": "", "B": "b", "DOLLAR": "$X"})
	tests := []struct {
		in, want string
		refs     []ref
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "a", refs: []ref{{name: "A", set: true}}},
		{in: "x${A}y${B}z", want: "xaybz", refs: []ref{{name: "A", set: true}, {name: "B", set: true}}},
		{in: "${UNSET}", want: "", refs: []ref{{name: "UNSET"}}},
		{in: "${UNSET:-d}", want: "d", refs: []ref{{name: "UNSET", hasDefault: true}}},
		{in: "${A:-d}", want: "a", refs: []ref{{name: "A", hasDefault: true, set: true}}},
		{in: "${EMPTY:-d}", want: "d", refs: []ref{{name: "EMPTY", hasDefault: true, set: true}}},
		{in: "${EMPTY}", want: "", refs: []ref{{name: "EMPTY", set: true}}},
		{in: "${UNSET:-}", want: "", refs: []ref{{name: "UNSET", hasDefault: true}}},
		{in: "${UNSET:-a b:c}", want: "a b:c", refs: []ref{{name: "UNSET", hasDefault: true}}},
		{in: "${UNSET:-${B}}", want: "b", refs: []ref{{name: "B", hasDefault: true, set: true}, {name: "UNSET", hasDefault: true}}},
		{in: "${UNSET:-$${}", want: "${", refs: []ref{{name: "UNSET", hasDefault: true}}},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$$${A}", want: "$a", refs: []ref{{name: "A", set: true}}},
		{in: "cost $5, ^a$ and $A", want: "cost $5, ^a$ and $A"},
		{in: "$", want: "$"},
		{in: "}{", want: "}{"},
		// Values are not expanded again: a $ inside a variable stays.
		{in: "${DOLLAR}", want: "$X", refs: []ref{{name: "DOLLAR", set: true}}},
		{in: "${A", err: "unterminated ${; close it with } or write $$ for a literal $"},
		{in: "${A:-x", err: "unterminated ${; close it with } or write $$ for a literal $"},
		{in: "${", err: "unterminated ${; close it with } or write $$ for a literal $"},
		{in: "${A:?msg}", err: "unsupported ${A:…}; use ${A} or ${A:-default} (write $$ for a literal $)"},
		{in: "${A.B}", err: "unsupported ${A.…}; use ${A} or ${A:-default} (write $$ for a literal $)"},
		{in: "${ A}", err: "${…} without a variable name; names are letters, digits and _ and do not start with a digit (write $$ for a literal $)"},
		{in: "${A:-${B:-${A:-${B:-${A:-${B:-${A:-${B:-${A}}}}}}}}}", err: "${…} nested too deeply; use at most 8 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, refs, err := expand(tt.in, vars)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("expand = %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(tt.refs, refs, cmp.AllowUnexported(ref{})); diff != "" {
				t.Errorf("refs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDotEnv(t *testing.T) {
	text := "# comment\n\nA=1\nexport B = two words \nC=\"quoted # not a comment\" # comment\n" +
		"D='single $X \\n'\nE=\"esc\\n\\t\\\"\\\\\"\nF=\nG=x # trailing\r\nA=last\nH=a=b\n"
	vars, ps := parseDotEnv(text, ".env")
	if len(ps.list) > 0 {
		t.Fatalf("problems: %v", ps.err())
	}
	want := map[string]string{
		"A": "last", "B": "two words", "C": "quoted # not a comment", "D": `single $X \n`,
		"E": "esc\n\t\"\\", "F": "", "G": "x", "H": "a=b",
	}
	if diff := cmp.Diff(want, vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}

	_, ps = parseDotEnv("OK=1\nno equals\n1BAD=x\nQ=\"open\nR='a' b\n", "/p/.env")
	var got []string
	for _, p := range ps.list {
		got = append(got, p.String())
	}
	wantProblems := []string{
		"/p/.env:2: want KEY=value with a name of letters, digits and _, not starting with a digit",
		"/p/.env:3: want KEY=value with a name of letters, digits and _, not starting with a digit",
		"/p/.env:4: Q: unterminated quote; close it on the same line (values span one line)",
		"/p/.env:5: R: unexpected text after the closing quote; quote the whole value",
	}
	if diff := cmp.Diff(wantProblems, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestBadDotEnvFailsLoad(t *testing.T) {
	_, err := loadYAML(t, "version: 1\n", nil, "oops\n")
	if err == nil || !errorsIsInvalid(err) {
		t.Fatalf("error = %v, want ErrInvalid", err)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word string
		want string
	}{
		{"comand", "command"},
		{"Command", "command"},
		{"hedaers", "headers"},
		{"header", "headers"},
		{"state-dir", "state_dir"},
		{"environment", "env"},
		{"workdir", "cwd"},
		{"zzz", ""},
		{"x", ""},
	}
	known := append(append([]string{}, backendKeys...), gatewayKeys...)
	for _, tt := range tests {
		if got := suggest(tt.word, known); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}
