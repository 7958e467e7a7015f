package catalog

import (
	"encoding/json"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
)

// TestOnChangeAndBare checks that every change of the live tool set, and a
// reload, reaches OnChange, and that Bare follows the config.
func TestOnChangeAndBare(t *testing.T) {
	live := &liveTools{tools: map[string][]manifest.Tool{}}
	reg := registry.New()
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "notes", Tools: []manifest.Tool{tool("read_note", "Read.")}}, true); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{Name: "notes"}}}
	changes := 0
	c := New(Options{Registry: reg, Backends: live, Config: cfg, Search: Lexical(search.Build(nil)), OnChange: func() { changes++ }})
	if c.Bare("notes") {
		t.Error("notes is bare before any config says so")
	}
	start := changes
	live.tools["notes"] = []manifest.Tool{tool("read_note", "Read."), tool("write_note", "Write.")}
	if err := c.Refresh(t.Context(), "notes"); err != nil {
		t.Fatal(err)
	}
	if changes != start+1 {
		t.Errorf("drift: %d OnChange calls, want 1", changes-start)
	}
	next := *cfg
	next.Backends = []config.Backend{{Name: "notes", Bare: true}}
	c.SetConfig(&next)
	if changes != start+2 || !c.Bare("notes") {
		t.Errorf("reload: %d OnChange calls (want 2 in all), bare=%v", changes-start, c.Bare("notes"))
	}
}

func TestDynamicBare(t *testing.T) {
	for def, want := range map[string]bool{
		`{"transport":"http","bare":true}`:   true,
		`{"transport":"http","bare":"TRUE"}`: true,
		`{"transport":"http","bare":false}`:  false,
		`{"transport":"http"}`:               false,
	} {
		if got := dynamicBare(json.RawMessage(def)); got != want {
			t.Errorf("dynamicBare(%s) = %v, want %v", def, got, want)
		}
	}
}
