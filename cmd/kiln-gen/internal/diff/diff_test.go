package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// summarise reduces changes to "severity kind path" lines, with "out:" in
// front of output-schema paths, so that a case states only what it tests.
func summarise(changes []Change) []string {
	var out []string
	for _, c := range changes {
		path := c.Path
		if c.Output {
			path = "out:" + path
		}
		out = append(out, fmt.Sprintf("%s %s %s", c.Severity, c.Kind, path))
	}
	return out
}

func toolManifest(in, out string) *manifest.Manifest {
	t := manifest.Tool{Name: "t", InputSchema: json.RawMessage(in)}
	if out != "" {
		t.OutputSchema = json.RawMessage(out)
	}
	return &manifest.Manifest{Version: manifest.Version, Backend: "b", Tools: []manifest.Tool{t}}
}

// expectInput diffs two input schemas of one tool.
func expectInput(t *testing.T, old, new string, want ...string) {
	t.Helper()
	expectChanges(t, Manifests(toolManifest(old, ""), toolManifest(new, "")), want)
}

// expectOutput diffs two output schemas of one tool.
func expectOutput(t *testing.T, old, new string, want ...string) {
	t.Helper()
	expectChanges(t, Manifests(toolManifest(`{}`, old), toolManifest(`{}`, new)), want)
}

func expectChanges(t *testing.T, got []Change, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, summarise(got)); diff != "" {
		t.Errorf("changes (-want +got):\n%s\nmessages:\n%s", diff, messages(got))
	}
}

func messages(cs []Change) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

const obj = `{"type":"object","properties":%s,"required":%s}`

func props(p, req string) string { return fmt.Sprintf(obj, p, req) }

func TestInputSchema(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"identical", props(`{"a":{"type":"string"}}`, `["a"]`), props(`{"a":{"type":"string"}}`, `["a"]`), nil},
		{"key order and spacing only", `{"type":"object","properties":{"a":{"type":"string","minLength":1}}}`,
			`{ "properties": {"a": {"minLength": 1, "type": "string"}}, "type": "object" }`, nil},
		{"number spelling", props(`{"a":{"type":"number","minimum":1}}`, `[]`), props(`{"a":{"type":"number","minimum":1.0}}`, `[]`), nil},
		{"integer inside number", props(`{"a":{"type":["integer","number"]}}`, `[]`), props(`{"a":{"type":"number"}}`, `[]`), nil},
		{"optional added", props(`{}`, `[]`), props(`{"a":{"type":"string"}}`, `[]`), []string{"compatible param-added a"}},
		{"required added", props(`{}`, `[]`), props(`{"a":{"type":"string"}}`, `["a"]`), []string{"BREAKING param-added a"}},
		{"removed", props(`{"a":{}}`, `[]`), props(`{}`, `[]`), []string{"BREAKING param-removed a"}},
		{"became required", props(`{"a":{}}`, `[]`), props(`{"a":{}}`, `["a"]`), []string{"BREAKING required a"}},
		{"became optional", props(`{"a":{}}`, `["a"]`), props(`{"a":{}}`, `[]`), []string{"compatible optional a"}},
		{"required name without schema gains a type", props(`{}`, `["a"]`), props(`{"a":{"type":"string"}}`, `["a"]`),
			[]string{"BREAKING type a"}},
		{"widened", props(`{"a":{"type":"integer"}}`, `[]`), props(`{"a":{"type":"number"}}`, `[]`), []string{"compatible type a"}},
		{"narrowed", props(`{"a":{"type":"number"}}`, `[]`), props(`{"a":{"type":"integer"}}`, `[]`), []string{"BREAKING type a"}},
		{"type swapped", props(`{"a":{"type":"string"}}`, `[]`), props(`{"a":{"type":"boolean"}}`, `[]`), []string{"BREAKING type a"}},
		{"nullable added", props(`{"a":{"type":"string"}}`, `[]`), props(`{"a":{"type":["string","null"]}}`, `[]`), []string{"compatible type a"}},
		{"disjoint types hide nested noise",
			props(`{"a":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}`, `[]`),
			props(`{"a":{"type":"string","minLength":3}}`, `[]`), []string{"BREAKING type a"}},
		{"enum narrowed", props(`{"a":{"enum":["x","y"]}}`, `[]`), props(`{"a":{"enum":["x"]}}`, `[]`), []string{"BREAKING enum-removed a"}},
		{"enum widened", props(`{"a":{"enum":["x"]}}`, `[]`), props(`{"a":{"enum":["x","y"]}}`, `[]`), []string{"compatible enum-added a"}},
		{"enum reordered", props(`{"a":{"enum":["x","y"]}}`, `[]`), props(`{"a":{"enum":["y","x"]}}`, `[]`), nil},
		{"enum introduced", props(`{"a":{"type":"string"}}`, `[]`), props(`{"a":{"type":"string","enum":["x"]}}`, `[]`), []string{"BREAKING constraint a"}},
		{"enum dropped", props(`{"a":{"enum":["x"]}}`, `[]`), props(`{"a":{}}`, `[]`), []string{"compatible constraint a"}},
		{"const changed", props(`{"a":{"const":1}}`, `[]`), props(`{"a":{"const":2}}`, `[]`),
			[]string{"BREAKING enum-removed a", "compatible enum-added a"}},
		{"closed", `{"type":"object"}`, `{"type":"object","additionalProperties":false}`, []string{"BREAKING additional-properties "}},
		{"opened", `{"type":"object","additionalProperties":false}`, `{"type":"object","additionalProperties":true}`, []string{"compatible additional-properties "}},
		{"closed to schema", `{"additionalProperties":false}`, `{"additionalProperties":{"type":"string"}}`, []string{"compatible additional-properties "}},
		{"open to schema", `{"additionalProperties":{}}`, `{"additionalProperties":{"type":"string"}}`, []string{"BREAKING additional-properties "}},
		{"map values", `{"additionalProperties":{"type":"integer"}}`, `{"additionalProperties":{"type":"number"}}`, []string{"compatible type *"}},
		{"nested object", props(`{"o":{"properties":{"p":{"type":"string"}}}}`, `[]`), props(`{"o":{"properties":{"p":{"type":"integer"}}}}`, `[]`),
			[]string{"BREAKING type o.p"}},
		{"array items", props(`{"l":{"type":"array","items":{"properties":{"id":{}},"required":["id"]}}}`, `[]`),
			props(`{"l":{"type":"array","items":{"properties":{}}}}`, `[]`), []string{"BREAKING param-removed l[].id"}},
		{"odd names", props(`{"a.b":{"type":"string"}}`, `[]`), props(`{"a.b":{"type":"integer"}}`, `[]`), []string{`BREAKING type ["a.b"]`}},
		{"boolean schema", props(`{"a":true}`, `[]`), props(`{"a":false}`, `[]`), []string{"BREAKING not-analysed a"}},
		{"anyOf changed", props(`{"a":{"anyOf":[{"type":"string"},{"type":"object"}]}}`, `[]`),
			props(`{"a":{"anyOf":[{"type":"string"},{"type":"array"}]}}`, `[]`), []string{"BREAKING type a"}},
		{"opaque anyOf changed", props(`{"a":{"anyOf":[{"minLength":1},{"type":"object"}]}}`, `[]`),
			props(`{"a":{"anyOf":[{"minLength":2},{"type":"object"}]}}`, `[]`), []string{"BREAKING not-analysed a"}},
		{"optional folded", props(`{"a":{"anyOf":[{"type":"object","properties":{"x":{}}},{"type":"null"}]}}`, `[]`),
			props(`{"a":{"anyOf":[{"type":"object","properties":{"x":{},"y":{}}},{"type":"null"}]}}`, `[]`), []string{"compatible param-added a.y"}},
		{"tuple items", `{"items":[{"type":"string"}]}`, `{"items":[{"type":"integer"}]}`, []string{"BREAKING not-analysed "}},
		{"local ref followed", `{"$defs":{"A":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/A"}}}`,
			`{"$defs":{"A":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/A"}}}`, []string{"BREAKING type a"}},
		{"unused definition ignored", `{"$defs":{"A":{"type":"string"}}}`, `{"$defs":{"A":{"type":"integer"}}}`, nil},
		{"unresolvable local ref with changed defs", `{"$defs":{"A":{}},"properties":{"a":{"$ref":"#/$defs/B"}}}`,
			`{"$defs":{"A":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/B"}}}`, []string{"BREAKING not-analysed a"}},
		{"remote ref unchanged", `{"$defs":{"A":{}},"properties":{"a":{"$ref":"https://x/s.json"}}}`,
			`{"$defs":{"A":{"type":"string"}},"properties":{"a":{"$ref":"https://x/s.json"}}}`, nil},
		{"remote ref changed", `{"properties":{"a":{"$ref":"https://x/1.json"}}}`, `{"properties":{"a":{"$ref":"https://x/2.json"}}}`,
			[]string{"BREAKING not-analysed a"}},
		{"recursive ref", `{"$defs":{"N":{"properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}`,
			`{"$defs":{"N":{"properties":{"v":{"type":"number"},"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}`,
			[]string{"compatible type v"}},
		{"recursive ref with local note", `{"$defs":{"N":{"properties":{"next":{"$ref":"#/$defs/N","description":"a"}}}},"$ref":"#/$defs/N"}`,
			`{"$defs":{"N":{"properties":{"next":{"$ref":"#/$defs/N","description":"b"}}}},"$ref":"#/$defs/N"}`,
			[]string{"cosmetic description next"}},
		{"self ref", `{"properties":{"me":{"$ref":"#"},"x":{"type":"string"}}}`, `{"properties":{"me":{"$ref":"#"},"x":{"type":"integer"}}}`,
			[]string{"BREAKING type x"}},
		{"minimum raised", props(`{"a":{"minimum":1}}`, `[]`), props(`{"a":{"minimum":2}}`, `[]`), []string{"BREAKING constraint a"}},
		{"maximum raised", props(`{"a":{"maximum":1}}`, `[]`), props(`{"a":{"maximum":2}}`, `[]`), []string{"compatible constraint a"}},
		{"bound added", props(`{"a":{}}`, `[]`), props(`{"a":{"maxItems":2}}`, `[]`), []string{"BREAKING constraint a"}},
		{"bound removed", props(`{"a":{"maxItems":2}}`, `[]`), props(`{"a":{}}`, `[]`), []string{"compatible constraint a"}},
		{"draft 4 exclusive bound", props(`{"a":{"minimum":1,"exclusiveMinimum":false}}`, `[]`),
			props(`{"a":{"minimum":1,"exclusiveMinimum":true}}`, `[]`), []string{"BREAKING constraint a"}},
		{"pattern removed", props(`{"a":{"pattern":"x"}}`, `[]`), props(`{"a":{}}`, `[]`), []string{"compatible constraint a"}},
		{"default", props(`{"a":{"default":1}}`, `[]`), props(`{"a":{"default":2}}`, `[]`), []string{"compatible default a"}},
		{"description", props(`{"a":{"description":"x"}}`, `[]`), props(`{"a":{"description":"y"}}`, `[]`), []string{"cosmetic description a"}},
		{"title", `{"title":"x"}`, `{"title":"y"}`, []string{"cosmetic title "}},
		{"unknown keyword", `{"x-foo":1}`, `{"x-foo":2}`, []string{"compatible keyword "}},
		{"not JSON", `{"type":`, `{"type":"object"}`, []string{"BREAKING not-analysed "}},
		{"not a schema", props(`{"a":3}`, `[]`), props(`{"a":4}`, `[]`), []string{"BREAKING not-analysed a"}},
		{"empty means anything", ``, `{"type":"object"}`, []string{"BREAKING type "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectInput(t, tt.old, tt.new, tt.want...) })
	}
}

// Output schemas are judged from the reader's side: the same edits that
// break callers sending input are harmless to readers, and vice versa.
func TestOutputSchema(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"none", ``, ``, nil},
		{"declared", ``, `{"type":"object"}`, []string{"compatible output-added out:"}},
		{"dropped", `{"type":"object"}`, ``, []string{"BREAKING output-removed out:"}},
		{"field added", props(`{}`, `[]`), props(`{"a":{}}`, `["a"]`), []string{"compatible param-added out:a"}},
		{"field removed", props(`{"a":{}}`, `[]`), props(`{}`, `[]`), []string{"BREAKING param-removed out:a"}},
		{"field may be missing", props(`{"a":{}}`, `["a"]`), props(`{"a":{}}`, `[]`), []string{"BREAKING optional out:a"}},
		{"field always present", props(`{"a":{}}`, `[]`), props(`{"a":{}}`, `["a"]`), []string{"compatible required out:a"}},
		{"widened", props(`{"a":{"type":"integer"}}`, `[]`), props(`{"a":{"type":"number"}}`, `[]`), []string{"BREAKING type out:a"}},
		{"narrowed", props(`{"a":{"type":"number"}}`, `[]`), props(`{"a":{"type":"integer"}}`, `[]`), []string{"compatible type out:a"}},
		{"enum values", props(`{"a":{"enum":[1,2]}}`, `[]`), props(`{"a":{"enum":[2,3]}}`, `[]`),
			[]string{"compatible enum-added out:a", "compatible enum-removed out:a"}},
		{"closed", `{"type":"object"}`, `{"type":"object","additionalProperties":false}`, []string{"compatible additional-properties out:"}},
		{"tightened", props(`{"a":{"maxLength":9}}`, `[]`), props(`{"a":{"maxLength":3}}`, `[]`), []string{"compatible constraint out:a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectOutput(t, tt.old, tt.new, tt.want...) })
	}
}

// Definitions that refer to each other twice over describe 2^n paths; the
// walk must stop at its budget and say so instead of running for minutes.
func TestBudget(t *testing.T) {
	defs := func(leaf string) string {
		var b strings.Builder
		b.WriteString(`{"$defs":{`)
		const n = 20
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"properties":{"l":{"$ref":"#/$defs/d%d"},"r":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"type":%q}},"$ref":"#/$defs/d0"}`, n, leaf)
		return b.String()
	}
	got := Manifests(toolManifest(defs("string"), ""), toolManifest(defs("integer"), ""))
	if len(got) == 0 || len(got) > walkBudget+1 {
		t.Fatalf("got %d changes, want between 1 and %d", len(got), walkBudget+1)
	}
	last := got[len(got)-1]
	if !slices.ContainsFunc(got, func(c Change) bool {
		return c.Kind == Unanalysed && c.Path == "" && strings.Contains(c.Message, "too large")
	}) {
		t.Errorf("no budget-exhausted change; last change: %s", last)
	}
}

func TestDeepNesting(t *testing.T) {
	nest := func(leaf string) string {
		return strings.Repeat(`{"properties":{"a":`, 100) + `{"type":"` + leaf + `"}` + strings.Repeat(`}}`, 100)
	}
	got := Manifests(toolManifest(nest("string"), ""), toolManifest(nest("integer"), ""))
	if len(got) != 1 || got[0].Kind != Unanalysed || got[0].Severity != Breaking {
		t.Fatalf("got %v, want one Breaking Unanalysed change", summarise(got))
	}
}

func TestBackends(t *testing.T) {
	m := func(name string, tools ...string) *manifest.Manifest {
		out := &manifest.Manifest{Version: manifest.Version, Backend: name}
		for _, tn := range tools {
			out.Tools = append(out.Tools, manifest.Tool{Name: tn, InputSchema: json.RawMessage(`{}`)})
		}
		return out
	}
	old := []*manifest.Manifest{m("b", "x"), nil, m("a", "x"), m("c")}
	new := []*manifest.Manifest{m("d"), m("a", "x", "y"), m("b", "x")}
	got := make([]string, 0)
	for _, c := range Backends(old, new) {
		got = append(got, c.Backend+": "+c.String())
	}
	want := []string{
		"a: tool y: added",
		"c: backend removed (had 0 tools); calls to it will fail",
		"d: backend added (0 tools)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := Manifests(nil, nil); got != nil {
		t.Errorf("Manifests(nil, nil) = %v, want nil", got)
	}
}

func TestHasBreaking(t *testing.T) {
	tests := []struct {
		sevs []Severity
		want bool
	}{
		{nil, false},
		{[]Severity{Compatible, Cosmetic, Info}, false},
		{[]Severity{Cosmetic, Breaking}, true},
	}
	for _, tt := range tests {
		var cs []Change
		for _, s := range tt.sevs {
			cs = append(cs, Change{Severity: s})
		}
		if got := HasBreaking(cs); got != tt.want {
			t.Errorf("HasBreaking(%v) = %v, want %v", tt.sevs, got, tt.want)
		}
	}
}

func TestRenderEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "no changes\n"; got != want {
		t.Errorf("Render(nil) = %q, want %q", got, want)
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestRenderWriteError(t *testing.T) {
	err := Render(failWriter{}, []Change{{Backend: "b", Message: "m"}})
	if !errors.Is(err, errWrite) {
		t.Errorf("Render error = %v, want it to wrap %v", err, errWrite)
	}
}

func TestTextDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"one line", "a", "b", []string{"- a", "+ b"}},
		{"added", "", "a", []string{"+ a"}},
		{"context", "1\n2\n3\n4\n5\n6", "1\n2\n3\nX\n5\n6",
			[]string{"  ...", "  3", "- 4", "+ X", "  5", "  ..."}},
		{"crlf", "a\r\nb", "a\nc", []string{"  a", "- b", "+ c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, textDiff(tt.old, tt.new)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeterminism shuffles every list and reverses every object's key order
// in each golden case; neither may change a single field of the result. A
// one-sided case (a backend added or removed) scrambles the side it has.
func TestDeterminism(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/old.json")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			old := readManifest(t, filepath.Join(dir, "old.json"))
			new := readManifest(t, filepath.Join(dir, "new.json"))
			want := Manifests(old, new)
			got := Manifests(scramble(t, rng, old), scramble(t, rng, new))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scrambled input changed the result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, Manifests(old, new)); diff != "" {
				t.Errorf("second run differs (-want +got):\n%s", diff)
			}
		})
	}
}

// scramble returns a copy of m, nil for nil, with every list shuffled and
// every object's keys reversed.
func scramble(t *testing.T, rng *rand.Rand, m *manifest.Manifest) *manifest.Manifest {
	t.Helper()
	if m == nil {
		return nil
	}
	c := *m
	c.Tools = slices.Clone(m.Tools)
	for i := range c.Tools {
		c.Tools[i].InputSchema = reverseKeys(t, c.Tools[i].InputSchema)
		c.Tools[i].OutputSchema = reverseKeys(t, c.Tools[i].OutputSchema)
		c.Tools[i].Annotations = reverseKeys(t, c.Tools[i].Annotations)
	}
	rng.Shuffle(len(c.Tools), func(i, j int) { c.Tools[i], c.Tools[j] = c.Tools[j], c.Tools[i] })
	c.Resources = slices.Clone(m.Resources)
	rng.Shuffle(len(c.Resources), func(i, j int) { c.Resources[i], c.Resources[j] = c.Resources[j], c.Resources[i] })
	c.ResourceTemplates = slices.Clone(m.ResourceTemplates)
	rng.Shuffle(len(c.ResourceTemplates), func(i, j int) {
		c.ResourceTemplates[i], c.ResourceTemplates[j] = c.ResourceTemplates[j], c.ResourceTemplates[i]
	})
	c.Prompts = slices.Clone(m.Prompts)
	rng.Shuffle(len(c.Prompts), func(i, j int) { c.Prompts[i], c.Prompts[j] = c.Prompts[j], c.Prompts[i] })
	for i := range c.Prompts {
		args := slices.Clone(c.Prompts[i].Arguments)
		slices.Reverse(args)
		c.Prompts[i].Arguments = args
	}
	return &c
}

// reverseKeys re-encodes JSON with every object's keys in reverse order,
// which encoding/json alone never produces.
func reverseKeys(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	if len(raw) == 0 {
		return raw
	}
	v, ok := decodeJSON(raw)
	if !ok {
		t.Fatalf("bad JSON in case: %s", raw)
	}
	var b strings.Builder
	var enc func(v any)
	enc = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			b.WriteString("{ ")
			keys := sortedKeys(x)
			slices.Reverse(keys)
			for i, k := range keys {
				if i > 0 {
					b.WriteString(" ,\n")
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteString(" : ")
				enc(x[k])
			}
			b.WriteString("}")
		case []any:
			b.WriteString("[")
			for i, e := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				enc(e)
			}
			b.WriteString("]")
		default:
			b.WriteString(canon(x))
		}
	}
	enc(v)
	return json.RawMessage(b.String())
}

// TestGoldensCoverKinds keeps the golden cases honest: every Kind and
// Severity must appear in at least one want.txt-producing case.
func TestGoldensCoverKinds(t *testing.T) {
	kinds := map[Kind]bool{}
	sevs := map[Severity]bool{}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "fuzz" {
			continue
		}
		for _, c := range loadCase(t, filepath.Join("testdata", e.Name())) {
			kinds[c.Kind] = true
			sevs[c.Severity] = true
		}
	}
	for k := Added; k <= Icons; k++ {
		if !kinds[k] {
			t.Errorf("no golden case produces Kind %s", k)
		}
	}
	for s := Breaking; s <= Info; s++ {
		if !sevs[s] {
			t.Errorf("no golden case produces Severity %s", s)
		}
	}
}

// BenchmarkManifests diffs every one-backend golden case once per iteration.
func BenchmarkManifests(b *testing.B) {
	paths, err := filepath.Glob("testdata/*/old.json")
	if err != nil {
		b.Fatal(err)
	}
	var pairs [][2]*manifest.Manifest
	for _, p := range paths {
		old, new := readManifest(b, p), readManifest(b, filepath.Join(filepath.Dir(p), "new.json"))
		pairs = append(pairs, [2]*manifest.Manifest{old, new})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pairs {
			Manifests(p[0], p[1])
		}
	}
}

func TestResourceAndPromptTitles(t *testing.T) {
	m := func(title string) *manifest.Manifest {
		return &manifest.Manifest{Version: manifest.Version, Backend: "b",
			Resources:         []manifest.Resource{{URI: "x://1", Name: "one", Title: title}},
			ResourceTemplates: []manifest.ResourceTemplate{{URITemplate: "x://{id}", Name: "t", Title: title}},
			Prompts:           []manifest.Prompt{{Name: "p", Title: title}}}
	}
	got := make([]string, 0)
	for _, c := range Manifests(m("Old"), m("New")) {
		got = append(got, c.String())
	}
	want := []string{
		`resource x://1: title changed from "Old" to "New"`,
		`resource template x://{id}: title changed from "Old" to "New"`,
		`prompt p: title changed from "Old" to "New"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
