package server

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// TestDirectListSkipsNonObjectSchemas: a backend's live tool whose input
// or output schema is not a JSON object (served under drift: warn or
// follow, or by a backend with no review) is left out of a direct-mode
// tools/list, which a real client then still decodes, with the backend's
// other tools in it.
func TestDirectListSkipsNonObjectSchemas(t *testing.T) {
	for _, bad := range []manifest.Tool{
		{Name: "bad", InputSchema: json.RawMessage(`[]`)},
		{Name: "bad", InputSchema: json.RawMessage(`"x"`)},
		{Name: "bad", InputSchema: json.RawMessage(`{"properties":5}`)},
		{Name: "bad", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`[1]`)},
	} {
		env := newDirectServer(t, config.ExposeDirect, nil)
		env.reg.Replace(&manifest.Manifest{Version: 1, Backend: "other", Tools: []manifest.Tool{
			{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object"}`)}, bad}})
		env.srv.SyncTools()
		names := env.names(t) // fails the test when the client cannot decode the list
		if slices.Contains(names, "other__bad") || !slices.Contains(names, "other__echo") {
			t.Errorf("tools/list with %s %s = %v; want other__echo and no other__bad", bad.InputSchema, bad.OutputSchema, names)
		}
	}
}
