package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestCapableNamesTheMissingCapability(t *testing.T) {
	form := &mcp.ElicitationCapability{Form: &struct{}{}}
	url := &mcp.ElicitationCapability{URL: &struct{}{}}
	roots := &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}
	tests := []struct {
		name    string
		caps    mcp.ClientCapabilities
		method  string
		params  string
		missing string // "" when the client can answer
	}{
		{"sampling declared", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, "sampling/createMessage", `{}`, ""},
		{"sampling missing", mcp.ClientCapabilities{}, "sampling/createMessage", `{}`, `"sampling"`},
		{"empty elicitation means form", mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, "elicitation/create", `{"message":"x"}`, ""},
		{"form only, URL asked", mcp.ClientCapabilities{Elicitation: form}, "elicitation/create", `{"mode":"url","url":"https://x"}`, `"elicitation.url"`},
		{"URL only, form asked", mcp.ClientCapabilities{Elicitation: url}, "elicitation/create", `{"mode":"form"}`, `"elicitation.form"`},
		{"URL only, URL asked", mcp.ClientCapabilities{Elicitation: url}, "elicitation/create", `{"mode":"url"}`, ""},
		{"no elicitation", mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, "elicitation/create", `{}`, `"elicitation"`},
		{"roots declared", mcp.ClientCapabilities{Roots: roots}, "roots/list", `{}`, ""},
		{"roots missing", mcp.ClientCapabilities{}, "roots/list", `{}`, `"roots"`},
		{"unknown method", mcp.ClientCapabilities{}, "tools/call", `{}`, "does not forward tools/call"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := capable(tc.caps, tc.method, json.RawMessage(tc.params))
			switch {
			case tc.missing == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.missing != "" && (err == nil || !strings.Contains(err.Error(), tc.missing)):
				t.Errorf("err = %v, want it to name %s", err, tc.missing)
			}
		})
	}
}

func TestRootsInputRequestGetsParams(t *testing.T) {
	res := &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: mcp.InputRequests{"r": mcp.NewRootsInputRequest()}, RequestState: "s"}}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	got := string(withNotFoundURI(raw))
	if !strings.Contains(got, `"r":{"method":"roots/list","params":{}}`) {
		t.Errorf("roots/list input request without params: %s", got)
	}
	// Any other message passes unchanged.
	other := []byte(`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
	if string(withNotFoundURI(other)) != string(other) {
		t.Errorf("a roots/list request was changed: %s", withNotFoundURI(other))
	}
}
