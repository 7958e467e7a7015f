package emit

import (
	"go/token"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestExported(t *testing.T) {
	tests := []struct{ in, want string }{
		{"user_id", "UserID"},
		{"numResults", "NumResults"},
		{"num-results", "NumResults"},
		{"num_results", "NumResults"},
		{"HTTPServer", "HTTPServer"},
		{"getURLs", "GetURLs"},
		{"ids", "IDs"},
		{"MAX_RESULTS", "MaxResults"},
		{"sampleLLM", "SampleLLM"},
		{"utf8Data", "UTF8Data"},
		{"2fa", "N2fa"},
		{"123", "N123"},
		{"$ref", "DollarRef"},
		{"@type", "AtType"},
		{"-1", "Minus1"},
		{"_id", "ID"},
		{"__proto__", "Proto"},
		{"type", "Type"},
		{"func", "Func"},
		{"中文", "X中文"},
		{"ünïcode", "Ünïcode"},
		{"😀", "X"},
		{"", "X"},
		{"a b.c", "ABC"},
	}
	for _, tt := range tests {
		if got := exported(tt.in); got != tt.want {
			t.Errorf("exported(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPackageName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"server-everything", "servereverything"},
		{"12306-mcp", "n12306mcp"},
		{"Upper_Case", "uppercase"},
		{"go", "gopkg"},
		{"type", "typepkg"},
		{"main", "mainpkg"},
		{"init", "initpkg"},
		{"registry", "registrypkg"},
		{"r", "rpkg"},
		{"---", "backend"},
	}
	for _, tt := range tests {
		if got := packageName(tt.in); got != tt.want {
			t.Errorf("packageName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	got := packageNames([]string{"my-app", "my_app", "myapp"})
	want := map[string]string{"my-app": "myapp", "my_app": "myapp2", "myapp": "myapp3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packageNames (-want +got):\n%s", diff)
	}
}

// TestResolverStages pins the collision stages: base, backend prefix,
// Input suffix (types only), then a number.
func TestResolverStages(t *testing.T) {
	n := newNames("my-backend")
	var got []string
	for _, tool := range []string{"register", "get-data", "get_data", "get.data", "x"} {
		got = append(got, n.toolFunc(tool))
	}
	for _, tool := range []string{"get-data", "get_data", "get.data", "getData"} {
		got = append(got, n.argsType(tool))
	}
	got = append(got, n.nestedType("GetDataArgs", "opts"), n.nestedType("GetDataArgs", "opts"), n.nestedType("GetDataArgs", "opts"))
	want := []string{
		"MyBackendRegister", "GetData", "MyBackendGetData", "GetData2", "X",
		"GetDataArgs", "MyBackendGetDataArgs", "GetDataInput", "GetDataArgs2",
		"GetDataArgsOpts", "MyBackendGetDataArgsOpts", "GetDataArgsOpts2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"NumResults", "NumResults2", "NumResults3"}, fieldNames([]string{"num-results", "numResults", "num_results"})); diff != "" {
		t.Errorf("fieldNames (-want +got):\n%s", diff)
	}
}

func validExported(s string) bool {
	return token.IsIdentifier(s) && token.IsExported(s) && !token.IsKeyword(s)
}

// FuzzNames checks that the resolver never panics and always yields valid,
// distinct Go identifiers, whatever a backend calls its tools, properties
// or itself.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "type", "2fa", "num-results", "$ref", "中文", "😀", "a\x00b", "\xff", "main", "HTTPServer", "_", "ǅ", "ß"} {
		f.Add(s, s+"_")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []string{a, b} {
			if id := exported(s); !validExported(id) {
				t.Fatalf("exported(%q) = %q is not an exported identifier", s, id)
			}
			p := packageName(s)
			if !token.IsIdentifier(p) || token.IsKeyword(p) || packageReserved[p] || !utf8.ValidString(p) {
				t.Fatalf("packageName(%q) = %q is not a usable package name", s, p)
			}
		}
		n := newNames(a)
		ids := []string{n.toolFunc(a), n.toolFunc(b), n.argsType(a), n.argsType(b), n.nestedType(n.argsType(a), b)}
		ids = append(ids, fieldNames([]string{a, b, a + b})...)
		seen := map[string]bool{identBackend: true, identManifest: true, identRegister: true}
		for i, id := range ids {
			if !validExported(id) {
				t.Fatalf("resolver gave %q for %q/%q", id, a, b)
			}
			if i < 5 && seen[id] {
				t.Fatalf("resolver gave %q twice in one package for %q/%q", id, a, b)
			}
			seen[id] = true
		}
		if fs := fieldNames([]string{a, b}); fs[0] == fs[1] {
			t.Fatalf("fieldNames(%q, %q) collide: %q", a, b, fs)
		}
	})
}
