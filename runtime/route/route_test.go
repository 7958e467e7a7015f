package route

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/yosida95/uritemplate/v3"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		tpl, uri string
		want     bool
	}{
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/7", true},
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/", true},
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/a/b", false},
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/7", false},
		{"file:///{+path}", "file:///tmp/a/b.txt", true},
		{"file:///{path}", "file:///tmp/a", false},
		{"users{/id}", "users/42", true},
		{"search{?q,lang}", "search?q=go&lang=en", true},
		{"doc{#section}", "doc#intro", true},
		{"x{.ext}", "x.json", true},
		{"map{;lat,long}", "map;lat=1;long=2", true},
		{"prefix://{a}/{b}", "prefix://one/two", true},
		{"prefix://{a}/{b}", "other://one/two", false},
	} {
		tpl, err := uritemplate.New(c.tpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tpl, err)
		}
		if got := Match(tpl, c.uri); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.tpl, c.uri, got, c.want)
		}
	}
}

func TestOwner(t *testing.T) {
	table := New([]Backend{
		{Name: "zeta", URIs: []string{"shared://a", "zeta://only"}, Templates: []string{"file:///{+path}"}},
		{Name: "alpha", URIs: []string{"shared://a", "kiln://overview"}, Templates: []string{"file:///{+path}", "alpha://{id}"}},
		{Name: "mid", URIs: []string{"file:///exact.txt"}},
	})
	for _, c := range []struct{ uri, want string }{
		{"shared://a", "alpha"},        // claimed by two: first declared
		{"zeta://only", "zeta"},        // exact
		{"file:///exact.txt", "mid"},   // an exact URI beats an earlier template
		{"file:///etc/hosts", "alpha"}, // same template text in two: first declared
		{"alpha://42", "alpha"},        // template
		{"kiln://overview", ""},        // kiln's own
		{"nobody://x", ""},             // unknown
	} {
		got, _ := table.Owner(c.uri)
		if got != c.want {
			t.Errorf("Owner(%q) = %q, want %q", c.uri, got, c.want)
		}
	}
	if b, _ := table.TemplateOwner("file:///{+path}"); b != "alpha" {
		t.Errorf("TemplateOwner = %q, want alpha", b)
	}
}

func TestProblems(t *testing.T) {
	got := Problems([]Backend{
		{Name: "b", URIs: []string{"shared://a", "alpha://7"}, Templates: []string{"t://{x}", "bad://{x"}},
		{Name: "a", URIs: []string{"shared://a", "kiln://stats"}, Templates: []string{"t://{x}", "alpha://{id}"}},
	})
	want := []string{
		`backend "a" lists resource "kiln://stats" on kiln's own kiln:// scheme; kiln serves its own resource there and hides this one`,
		`resource "shared://a" is claimed by backends "a" and "b"; reads go to "a", declared first`,
		`resource "alpha://7" is claimed by backends "a" and "b"; reads go to "a", declared first`,
		`resource template "t://{x}" is listed by backends "a" and "b"; reads go to "a", declared first`,
	}
	if len(got) != 5 || !strings.Contains(got[4], `"bad://{x"`) {
		t.Fatalf("want 5 problems ending with the bad template, got %q", got)
	}
	if diff := cmp.Diff(want, got[:4]); diff != "" {
		t.Errorf("Problems (-want +got):\n%s", diff)
	}
}

// TestTemplateTooBigToMatch: a template the library parses but cannot
// compile to a regexp (more than a thousand variables in one expression)
// is refused by Parse, reported, and routes nothing; it ended the gateway
// from a goroutine before, at the first URI routed against it.
func TestTemplateTooBigToMatch(t *testing.T) {
	big := "x://{" + strings.TrimSuffix(strings.Repeat("a,", 1002), ",") + "}"
	backends := []Backend{{Name: "big", Templates: []string{big}}, {Name: "small", Templates: []string{"x://{id}"}}}
	if _, err := Parse(big); !errors.Is(err, ErrNoMatcher) {
		t.Errorf("Parse = %v, want ErrNoMatcher", err)
	}
	table := New(backends)
	if owner, ok := table.Owner("x://1"); !ok || owner != "small" {
		t.Errorf("Owner(x://1) = %q, %v; want the backend whose template compiles", owner, ok)
	}
	problems := strings.Join(Problems(backends), "\n")
	if !strings.Contains(problems, `backend "big" lists resource template`) || !strings.Contains(problems, "kiln cannot build a matcher for it") {
		t.Errorf("Problems does not report the template:\n%s", problems)
	}
	if extra := len(problems) - len(big); extra > 500 {
		t.Errorf("beside the template, the report has %d bytes: it quotes the whole regexp", extra)
	}
	// The one-pass build the server uses says and routes the same.
	both, listed := NewWithProblems(backends)
	if got := strings.Join(listed, "\n"); got != problems {
		t.Errorf("NewWithProblems lists\n%s\nwant what Problems lists\n%s", got, problems)
	}
	if owner, _ := both.Owner("x://1"); owner != "small" {
		t.Errorf("NewWithProblems' table: Owner(x://1) = %q, want small", owner)
	}
	if _, routed := both.TemplateOwner(big); routed {
		t.Error("NewWithProblems' table routes the template it refused")
	}
}
