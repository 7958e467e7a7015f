package registry

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var llmName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedBase(t *testing.T) {
	for _, c := range []struct {
		in   ExposeTool
		want string
	}{
		{ExposeTool{Backend: "everything", Tool: "get-sum"}, "everything__get-sum"},
		{ExposeTool{Backend: "fs", Tool: "read.file"}, "fs__read_file"},
		{ExposeTool{Backend: "fs", Tool: "read.file", Bare: true}, "read_file"},
		{ExposeTool{Backend: "x", Tool: "héllo wörld/ü"}, "x__h_llo_w_rld__"},
		{ExposeTool{Backend: "x", Tool: "日本", Bare: true}, "__"},
		{ExposeTool{Backend: "x", Tool: "echo", Bare: true}, "echo"},
	} {
		if got := ExposedBase(c.in); got != c.want {
			t.Errorf("ExposedBase(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExposeNames(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, c := range []struct {
		name  string
		tools []ExposeTool
		taken []string
		want  map[string]string
		coll  []Collision
	}{
		{"plain", []ExposeTool{{Backend: "everything", Tool: "echo"}, {Backend: "everything", Tool: "get-sum"}}, nil,
			map[string]string{"everything.echo": "everything__echo", "everything.get-sum": "everything__get-sum"}, nil},
		{"charset collision suffixes both", []ExposeTool{{Backend: "a", Tool: "x.y"}, {Backend: "a", Tool: "x/y"}}, nil,
			map[string]string{"a.x.y": "a__x_y_" + hash6("a.x.y"), "a.x/y": "a__x_y_" + hash6("a.x/y")},
			[]Collision{{Name: "a__x_y", IDs: []string{"a.x.y", "a.x/y"}}}},
		{"bare backends claim one name", []ExposeTool{{Backend: "a", Tool: "echo", Bare: true}, {Backend: "b", Tool: "echo", Bare: true}}, nil,
			map[string]string{"a.echo": "echo_" + hash6("a.echo"), "b.echo": "echo_" + hash6("b.echo")},
			[]Collision{{Name: "echo", IDs: []string{"a.echo", "b.echo"}}}},
		{"taken name stays with its owner", []ExposeTool{{Backend: "a", Tool: "search_tools", Bare: true}, {Backend: "a", Tool: "b"}}, []string{"search_tools"},
			map[string]string{"a.search_tools": "search_tools_" + hash6("a.search_tools"), "a.b": "a__b"},
			[]Collision{{Name: "search_tools", IDs: []string{"a.search_tools"}, Taken: true}}},
		{"long name is cut and suffixed", []ExposeTool{{Backend: "b", Tool: long}}, nil,
			map[string]string{"b." + long: ("b__" + long)[:57] + "_" + hash6("b."+long)}, nil},
		{"exactly 64 is kept", []ExposeTool{{Backend: "b", Tool: long[:61]}}, nil,
			map[string]string{"b." + long[:61]: "b__" + long[:61]}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			taken := func(n string) bool { return strings.Contains(strings.Join(c.taken, "\n")+"\n", n+"\n") }
			got, coll := ExposeNames(c.tools, taken)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.coll, coll); diff != "" {
				t.Errorf("collisions (-want +got):\n%s", diff)
			}
			for id, n := range got {
				if !llmName.MatchString(n) || !ValidExposedName(n) {
					t.Errorf("%s: %q is not accepted by LLM APIs", id, n)
				}
			}
		})
	}
}

// TestExposeNamesDeterministic checks that order does not matter and that
// no two tools share a name, over a set full of collisions.
func TestExposeNamesDeterministic(t *testing.T) {
	var tools []ExposeTool
	for _, b := range []string{"a", "a_b", "c"} {
		for _, n := range []string{"b__x", "x", "x.y", "x y", strings.Repeat("z", 80), strings.Repeat("z", 81)} {
			tools = append(tools, ExposeTool{Backend: b, Tool: n}, ExposeTool{Backend: b + "-bare", Tool: n, Bare: true})
		}
	}
	first, _ := ExposeNames(tools, nil)
	rev := make([]ExposeTool, len(tools))
	for i, tl := range tools {
		rev[len(tools)-1-i] = tl
	}
	second, _ := ExposeNames(rev, nil)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("order changed the names (-first +reversed):\n%s", diff)
	}
	seen := map[string]string{}
	for id, n := range first {
		if other, dup := seen[n]; dup {
			t.Errorf("%s and %s both named %q", id, other, n)
		}
		seen[n] = id
		if !ValidExposedName(n) {
			t.Errorf("%s: invalid name %q", id, n)
		}
	}
	if len(first) != len(tools) {
		t.Errorf("named %d tools, want %d", len(first), len(tools))
	}
}

// TestExposeNamesSuffixTaken covers a suffixed name that is already taken:
// the suffix grows instead of reusing it.
func TestExposeNamesSuffixTaken(t *testing.T) {
	tl := ExposeTool{Backend: "a", Tool: "x", Bare: true}
	short := "x_" + hash6("a.x")
	got, _ := ExposeNames([]ExposeTool{tl}, func(n string) bool { return n == "x" || n == short })
	if n := got["a.x"]; n == short || !strings.HasPrefix(n, short) || len(n) != len(short)+2 {
		t.Errorf("name %q, want %s plus two more hex digits", n, short)
	}
}

func hash6(id string) string { return withSuffix("", id, 6)[1:] }

// FuzzExposeNames checks the promises for any tool names: every name is
// accepted by LLM APIs, names are unique, and the order of tools does not
// change them.
func FuzzExposeNames(f *testing.F) {
	f.Add("everything", "get-sum", "everything", "get_sum", false)
	f.Add("a", "x.y", "a", "x/y", true)
	f.Add("b", strings.Repeat("é", 40), "b", strings.Repeat("è", 40), false)
	f.Fuzz(func(t *testing.T, b1, t1, b2, t2 string, bare bool) {
		tools := []ExposeTool{{Backend: b1, Tool: t1, Bare: bare}, {Backend: b2, Tool: t2, Bare: bare}, {Backend: b1, Tool: t2}}
		got, _ := ExposeNames(tools, func(n string) bool { return n == "search_tools" })
		rev, _ := ExposeNames([]ExposeTool{tools[2], tools[1], tools[0]}, func(n string) bool { return n == "search_tools" })
		if !cmp.Equal(got, rev) {
			t.Fatalf("order changed names: %v vs %v", got, rev)
		}
		seen := map[string]bool{}
		for id, n := range got {
			if !ValidExposedName(n) || n == "search_tools" {
				t.Fatalf("%q: bad name %q", id, n)
			}
			if seen[n] {
				t.Fatalf("name %q given twice in %v", n, got)
			}
			seen[n] = true
		}
	})
}

// BenchmarkExposeNames names 1,000 tools of 20 backends, what SyncTools
// pays on a change in direct mode when every tool is new.
func BenchmarkExposeNames(b *testing.B) {
	var tools []ExposeTool
	for i := range 1000 {
		tools = append(tools, ExposeTool{Backend: "backend" + strconv.Itoa(i%20), Tool: "tool-" + strconv.Itoa(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		ExposeNames(tools, nil)
	}
}
