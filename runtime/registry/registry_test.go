package registry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

func backend(name string, tools ...string) *manifest.Manifest {
	m := &manifest.Manifest{Version: manifest.Version, Backend: name}
	for _, t := range tools {
		m.Tools = append(m.Tools, manifest.Tool{Name: t, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return m
}

func ids(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID())
	}
	return out
}

func expectResolve(t *testing.T, r *Registry, name, wantID string) {
	t.Helper()
	got, err := r.Resolve(name)
	if err != nil {
		t.Fatalf("Resolve(%q) = %v, want %s", name, err, wantID)
	}
	if got.ID() != wantID {
		t.Fatalf("Resolve(%q) = %s, want %s", name, got.ID(), wantID)
	}
}

func expectResolveErr(t *testing.T, r *Registry, name string, sentinel error, mention string) {
	t.Helper()
	_, err := r.Resolve(name)
	if !errors.Is(err, sentinel) {
		t.Fatalf("Resolve(%q) = %v, want %v", name, err, sentinel)
	}
	if !strings.Contains(err.Error(), mention) {
		t.Fatalf("Resolve(%q) error %q does not mention %q", name, err, mention)
	}
}

func TestAliasLifecycle(t *testing.T) {
	r := New()
	if err := r.Add(backend("exa", "web_search", "find_similar"), true); err != nil {
		t.Fatal(err)
	}
	expectResolve(t, r, "web_search", "exa.web_search")
	expectResolve(t, r, "exa.web_search", "exa.web_search")

	// A second backend publishing the same name retires the bare alias.
	if err := r.Add(backend("tavily", "web_search"), false); err != nil {
		t.Fatal(err)
	}
	expectResolveErr(t, r, "web_search", ErrAmbiguous, "exa.web_search, tavily.web_search")
	expectResolve(t, r, "tavily.web_search", "tavily.web_search")

	// Removing it restores the alias.
	if !r.Remove("tavily") {
		t.Fatal("Remove(tavily) = false")
	}
	expectResolve(t, r, "web_search", "exa.web_search")
	if diff := cmp.Diff([]string{"exa.find_similar", "exa.web_search"}, ids(r.Tools())); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
}

func TestAddDuplicateBackend(t *testing.T) {
	r := New()
	if err := r.Add(backend("a", "x"), true); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(backend("a", "y"), false); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Add = %v, want ErrDuplicate", err)
	}
}

func TestReplaceKeepsCompiledFlag(t *testing.T) {
	r := New()
	_ = r.Add(backend("a", "x"), true)
	r.Replace(backend("a", "y"))
	b, _ := r.Backend("a")
	if !b.Compiled {
		t.Error("Replace dropped the Compiled flag")
	}
	expectResolve(t, r, "a.y", "a.y")
	expectResolveErr(t, r, "a.x", ErrNotFound, "")
}

func TestNotFoundHints(t *testing.T) {
	r := New()
	_ = r.Add(backend("everything", "echo", "get-sum"), true)
	_ = r.Add(backend("filesystem", "read_text_file"), true)
	tests := []struct{ name, mention string }{
		{"everything.ecoh", "did you mean everything.echo"},
		{"evrything.echo", `did you mean everything`},
		{"get-summ", "everything.get-sum"},
		{"filesystem.echo", "published as everything.echo"},
		{"completely_unrelated_tool", "search_tools"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectResolveErr(t, r, tc.name, ErrNotFound, tc.mention) })
	}
}

func TestToolNamesWithDots(t *testing.T) {
	r := New()
	_ = r.Add(backend("b", "has.dots"), true)
	expectResolve(t, r, "b.has.dots", "b.has.dots")
	expectResolve(t, r, "has.dots", "b.has.dots")
}

func TestSignatureAndExample(t *testing.T) {
	tool := &Tool{Backend: "my-backend", Tool: manifest.Tool{Name: "web-search", InputSchema: json.RawMessage(`{
		"type":"object",
		"properties":{
			"query":{"type":"string","description":"What to look for"},
			"num-results":{"type":"integer"},
			"mode":{"type":"string","enum":["fast","deep"]},
			"tags":{"type":["array","null"]}},
		"required":["query","mode"]}`)}}
	ident := func(b, t string) string { return strings.NewReplacer("-", "_").Replace(b + "." + t) }
	if got, want := tool.Signature(), `{mode: "fast"|"deep", query: string, "num-results"?: integer, tags?: array|null}`; got != want {
		t.Errorf("Signature() = %s\nwant %s", got, want)
	}
	if got, want := tool.Example(ident), `my_backend.web_search({mode: "fast", query: "…"})`; got != want {
		t.Errorf("Example() = %s\nwant %s", got, want)
	}
	bad := &Tool{Backend: "b", Tool: manifest.Tool{Name: "t", InputSchema: json.RawMessage(`not json`)}}
	if got := bad.Example(ident); got != "b.t({})" {
		t.Errorf("Example() on unreadable schema = %s", got)
	}
}
