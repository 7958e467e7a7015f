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
	// callReady may have retried while backends started; every attempt
	// went through the pipeline, so count at least one.
	var stats struct {
		Output struct {
			Calls          int `json:"calls"`
			BytesProcessed int `json:"bytes_processed"`
		} `json:"call_tool_chain_output"`
	}
	if err := json.Unmarshal([]byte(read("kiln://stats")), &stats); err != nil || stats.Output.Calls < 1 || stats.Output.BytesProcessed == 0 {
		t.Errorf("kiln://stats = %+v, %v", stats, err)
	}
}
