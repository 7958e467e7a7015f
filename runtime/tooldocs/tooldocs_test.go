package tooldocs

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/workspace"
)

// TestReferenceFresh keeps docs/reference/tools.md equal to what the
// server lists; `make docs` rewrites it.
func TestReferenceFresh(t *testing.T) {
	got, err := os.ReadFile("../../docs/reference/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Markdown()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/reference/tools.md differs from the tools kiln lists; run make docs and commit the result")
	}
}

// TestReferenceCoversEveryParameter checks the content: a section per
// tool and a row per top-level parameter, with ranges and enums shown.
func TestReferenceCoversEveryParameter(t *testing.T) {
	md, err := Markdown()
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, mt := range server.MetaTools(nil) {
		sec := section(t, s, mt.Name)
		names, _, err := orderedKeys(propertiesOf(t, mt.InputSchema))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.Contains(sec, "| `"+n+"` |") {
				t.Errorf("%s: no row for %s", mt.Name, n)
			}
		}
	}
	for _, wt := range workspace.Listed(config.Workspace{}) {
		sec := section(t, s, wt.Name)
		names, _, _ := orderedKeys(propertiesOf(t, wt.InputSchema))
		for _, n := range names {
			if !strings.Contains(sec, "| `"+n+"` |") {
				t.Errorf("%s: no row for %s", wt.Name, n)
			}
		}
	}
	for _, want := range []string{
		"| `limit` | integer |  | `10` | 1 to 50 |",                // search_tools
		"| `detail` | string |  | `\"brief\"` | `brief`, `full` |", // tool_info
		"| `manual_call_template.name` | string |",                 // nested
		"not offered when `readonly: true`",                        // Write
		"open-world when `bash.network: true`",                     // Bash
	} {
		if !strings.Contains(s, want) {
			t.Errorf("reference lacks %q", want)
		}
	}
}

func section(t *testing.T, md, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n### `"+name+"`\n")
	if !ok {
		t.Fatalf("no section for %s", name)
	}
	sec, _, _ := strings.Cut(rest, "\n### ")
	return sec
}

func propertiesOf(t *testing.T, schema json.RawMessage) json.RawMessage {
	t.Helper()
	var p property
	if err := json.Unmarshal(schema, &p); err != nil {
		t.Fatal(err)
	}
	return p.Properties
}
