//go:build e2e

package tests

import (
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

func TestResourcesOverStdio(t *testing.T) {
	s := newMCPGoStdio(t).(*mcpgoSession)
	callReady(t, s, "call_tool_chain", chainJSON("everything.echo", map[string]any{"message": "x"}))
	read := func(uri string) string {
		t.Helper()
		res, err := s.c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return res.Contents[0].(mcpgo.TextResourceContents).Text
	}
	var backends []struct {
		Name, State string
		Tools       int
	}
	if err := json.Unmarshal([]byte(read("kiln://backends")), &backends); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, b := range backends {
		states[b.Name] = b.State
	}
	if states["everything"] != "healthy" || len(states) != 3 {
		t.Errorf("kiln://backends states = %v", states)
	}
	if got := read("kiln://backend/everything"); !strings.Contains(got, "everything.echo") {
		t.Errorf("kiln://backend/everything = %s", got)
	}
	if got := read("kiln://stats"); !strings.Contains(got, `"calls": 1`) {
		t.Errorf("kiln://stats = %s", got)
	}
}
