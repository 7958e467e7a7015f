package scrub

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// cloneResult deep-copies r so a test can prove Result did not mutate it.
func cloneResult(r *toolcall.Result) *toolcall.Result {
	c := *r
	c.Content = nil
	for _, b := range r.Content {
		c.Content = append(c.Content, append(json.RawMessage(nil), b...))
	}
	c.StructuredContent = append(json.RawMessage(nil), r.StructuredContent...)
	c.Meta = append(json.RawMessage(nil), r.Meta...)
	return &c
}

func raws(blocks ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(blocks))
	for i, b := range blocks {
		out[i] = json.RawMessage(b)
	}
	return out
}

func TestResult(t *testing.T) {
	sc := New(Options{})
	// The binary fields hold a secret-shaped string on purpose: scrubbing
	// them would change bytes, so the test sees any touch.
	image := `{"type":"image","mimeType":"image/png","data":"` + fakeGH + `"}`
	audio := `{"data":"` + fakeGH + `","type":"audio","mimeType":"audio/wav"}`
	blob := `{"type":"resource","resource":{"uri":"file:///k","mimeType":"application/octet-stream","blob":"` + fakeGH + `"}}`
	in := &toolcall.Result{
		Content: raws(
			`{"type":"text","text":"token `+fakeGH+`"}`,
			image,
			audio,
			blob,
			`{"type":"resource","resource":{"uri":"file:///env","text":"API_KEY=abcd1234efgh5678"}}`,
			`{"type":"text","text":"clean"}`,
		),
		StructuredContent: json.RawMessage(`{"data":"` + fakeJWT + `","n":1}`),
		IsError:           true,
		Meta:              json.RawMessage(`{"trace":"` + fakeOpenAI + `"}`),
	}
	before := cloneResult(in)
	got := sc.Result(in)
	want := &toolcall.Result{
		Content: raws(
			`{"type":"text","text":"token [REDACTED:github-token]"}`,
			image,
			audio,
			blob,
			`{"type":"resource","resource":{"uri":"file:///env","text":"API_KEY=[REDACTED:assignment]"}}`,
			`{"type":"text","text":"clean"}`,
		),
		StructuredContent: json.RawMessage(`{"data":"[REDACTED:jwt]","n":1}`),
		IsError:           true,
		Meta:              json.RawMessage(`{"trace":"[REDACTED:openai-key]"}`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, in); diff != "" {
		t.Errorf("Result mutated its input (-before +after):\n%s", diff)
	}
	if got == in {
		t.Error("Result returned its input after redacting")
	}
}

func TestResultUnchangedReturnsInput(t *testing.T) {
	sc := New(Options{})
	in := &toolcall.Result{
		Content:           raws(`{"type":"text","text":"all clear"}`, `{"type":"image","data":"`+fakeGH+`","mimeType":"image/png"}`),
		StructuredContent: json.RawMessage(`{"ok":true}`),
	}
	if got := sc.Result(in); got != in {
		t.Errorf("Result copied a clean result: %+v", got)
	}
	if got := sc.Result(nil); got != nil {
		t.Errorf("Result(nil) = %+v", got)
	}
}

func TestResultTextHelper(t *testing.T) {
	sc := New(Options{})
	got := sc.Result(toolcall.Errorf("backend failed: password=%s", "hunter22"))
	if diff := cmp.Diff("backend failed: password=[REDACTED:assignment]", got.TextContent()); diff != "" {
		t.Errorf("TextContent (-want +got):\n%s", diff)
	}
	if !got.IsError {
		t.Error("IsError lost")
	}
}
