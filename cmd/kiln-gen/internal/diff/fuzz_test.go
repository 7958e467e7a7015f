package diff

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// FuzzManifests feeds arbitrary text as the input and output schemas (and
// annotations) of one tool on both sides. Whatever the text, the diff must
// not panic, must be empty against itself, must be sorted and repeatable,
// and must render without raw control characters.
func FuzzManifests(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"integer"},"b":{}},"additionalProperties":false}`)
	f.Add(`{"$defs":{"n":{"properties":{"c":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"$defs":{"n":{"properties":{"c":{"$ref":"#/$defs/n"},"d":true}}},"$ref":"#/$defs/n"}`)
	f.Add(`{"anyOf":[{"type":"string"},{"type":"null"}]}`, `{"oneOf":[{"$ref":"#"},{"type":"null"}]}`)
	f.Add(`{"items":[{"enum":[1,2]}],"minimum":1e400}`, `{"items":{"const":"\u001b"},"minimum":-1e400}`)
	f.Add(`true`, `[1,2,3]`)
	f.Add(``, `{"type":`)
	f.Fuzz(func(t *testing.T, old, new string) {
		om, nm := fuzzManifest(old), fuzzManifest(new)
		got := Manifests(om, nm)
		if !slices.IsSortedFunc(got, compare) {
			t.Error("changes are not sorted")
		}
		if diff := cmp.Diff(got, Manifests(om, nm)); diff != "" {
			t.Errorf("second run differs (-first +second):\n%s", diff)
		}
		for _, m := range []*manifest.Manifest{om, nm} {
			if self := Manifests(m, m); len(self) != 0 {
				t.Errorf("manifest compared with itself gives changes: %v", summarise(self))
			}
		}
		for _, c := range got {
			if c.Severity < Breaking || c.Severity > Info || c.Kind < Added || c.Kind > OutputRemoved {
				t.Errorf("change out of range: %+v", c)
			}
		}
		var b bytes.Buffer
		if err := Render(&b, got); err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(b.Bytes()) {
			t.Error("render is not valid UTF-8")
		}
		for _, r := range b.String() {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
				t.Fatalf("render contains raw %U", r)
			}
		}
	})
}

func fuzzManifest(schema string) *manifest.Manifest {
	raw := json.RawMessage(schema)
	return &manifest.Manifest{Version: manifest.Version, Backend: "fuzz", Tools: []manifest.Tool{{
		Name: "t", InputSchema: raw, OutputSchema: raw, Annotations: raw,
	}}}
}
