package catalog

import (
	"encoding/json"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
)

// TestBadLiveSchemas: a backend whose live tools carry an empty, null,
// non-object or malformed input schema is drift like any other: under pin
// the reviewed schema is served and nothing is held as a parameter, under
// warn the live tool is served; nothing panics on the way (listing,
// signatures, examples, search, the bridge's preamble, held arguments).
func TestBadLiveSchemas(t *testing.T) {
	for _, schema := range []string{"", "null", "[]", `"x"`, `{"properties":5}`, `{"properties":{"a":`, `{"type":"object","properties":{"n":null}}`} {
		for _, mode := range []config.DriftMode{config.DriftPin, config.DriftWarn} {
			t.Run(string(mode)+" "+schema, func(t *testing.T) {
				bad := func(name string) manifest.Tool {
					return manifest.Tool{Name: name, Description: "Changed.", InputSchema: json.RawMessage(schema)}
				}
				live := &liveTools{tools: map[string][]manifest.Tool{"notes": {bad("read_note"), tool("delete_note", "Delete a note."), bad("odd")}}}
				c, reg := newCatalogMode(t, live, mode, nil)
				refresh(t, c)
				refresh(t, c)
				for _, tl := range reg.Tools() {
					_ = tl.Signature()
					_ = tl.Example(func(b, n string) string { return b + "." + n })
				}
				_ = reg.HeldArgs("notes.read_note", json.RawMessage(`{"a":1,"n":2}`))
				v := c.View()
				_ = v.Search.Search("changed odd note", search.Options{Limit: 5})
				_ = v.Extra
				read, err := reg.Resolve("notes.read_note")
				if err != nil {
					t.Fatal(err)
				}
				if mode == config.DriftPin && string(read.InputSchema) != `{"type":"object"}` {
					t.Errorf("read_note's schema under pin = %s; want the reviewed one", read.InputSchema)
				}
			})
		}
	}
}
