package server

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/scrub"
)

// TestWindowScrubsResources: what the console reads through Resource is
// scrubbed as resources/read is (backend errors and stderr can hold
// secrets); here a secret in a tool's description.
func TestWindowScrubsResources(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	s.opts.Scrubber = scrub.New(scrub.Options{Values: []scrub.Value{{Name: "T", Value: "Returns the sum"}}})
	v, err := s.Resource(t.Context(), "kiln://tools")
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := v.(json.RawMessage)
	if !ok || !json.Valid(raw) {
		t.Fatalf("kiln://tools through the window: %T %s", v, raw)
	}
	if strings.Contains(string(raw), "Returns the sum") || !strings.Contains(string(raw), "REDACTED") {
		t.Errorf("not scrubbed: %s", raw)
	}
	if _, err := s.Resource(t.Context(), "kiln://backend/everything/tools"); err != nil {
		t.Errorf("a template resource: %v", err)
	}
	if _, err := s.Resource(t.Context(), "kiln://nothing"); err == nil {
		t.Error("an unknown resource answered")
	}
	if hits := s.SearchPeople(t.Context(), "sum two numbers", 5); len(hits) == 0 || hits[0].Tool != "everything.get-sum" || hits[0].Score <= 0 {
		t.Errorf("SearchPeople: %+v", hits)
	}
	if _, ok := s.ToolSchema(t.Context(), "everything.get-sum"); !ok {
		t.Error("ToolSchema of a listed tool")
	}
	if d := s.ToolDocs(t.Context()); !strings.Contains(d, "## everything.get-sum") || !strings.Contains(d, "| `a` |") {
		t.Errorf("ToolDocs: %s", d)
	}
}
