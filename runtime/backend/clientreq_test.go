package backend

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// answer is a Requester that answers every request with a fixed result
// and records what it was asked. A stand-in for kiln's server: the real one
// is exercised end to end in tests/clientreq_test.go.
type answer struct {
	result  string
	err     error
	methods []string
}

func (a *answer) ClientRequest(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a.methods = append(a.methods, method+" "+string(params))
	return json.RawMessage(a.result), a.err
}

func TestCallRequesterAnswersTheBackend(t *testing.T) {
	routed := &answer{result: `{"action":"decline"}`}
	cfg := stdioConfig(t, "serve")
	c, err := DialTimeout(t.Context(), cfg, 20*time.Second, Options{OnRequest: routed.ClientRequest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	// The call's own requester wins over routing.
	own := &answer{result: `{"action":"accept","content":{"name":"ada"}}`}
	r, err := c.CallTool(WithRequester(t.Context(), own), "ask", nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.TextContent(); got != "accept:map[name:ada]" {
		t.Errorf("with the call's requester: %q", got)
	}
	if len(own.methods) != 1 || !strings.HasPrefix(own.methods[0], "elicitation/create ") || !strings.Contains(own.methods[0], `"message":"name?"`) {
		t.Errorf("requester was asked %v", own.methods)
	}
	// Without one, the dispatcher's routing answers.
	if r, err = c.CallTool(t.Context(), "ask", nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.TextContent(); got != "decline:<nil>" || len(routed.methods) != 1 {
		t.Errorf("routed: %q after %v", got, routed.methods)
	}
	// A refusal reaches the backend as an error, and the call ends.
	routed.err = errors.New("no client session can answer")
	if _, err = c.CallTool(t.Context(), "ask", nil, CallOptions{}); err == nil || !strings.Contains(err.Error(), "no client session can answer") {
		t.Errorf("refused request: err = %v", err)
	}
}

func TestClientCapabilitiesOnlyWhenForwarded(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"kiln-gen record", Options{}, `{}`},
		{"serve", Options{OnRequest: (&answer{}).ClientRequest},
			`{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DialTimeout(t.Context(), stdioConfig(t, "serve"), 20*time.Second, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r, err := c.CallTool(t.Context(), "caps", nil, CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			_ = json.Unmarshal([]byte(r.TextContent()), &got)
			raw, _ := json.Marshal(got)
			if string(raw) != tc.want {
				t.Errorf("client capabilities = %s, want %s", raw, tc.want)
			}
		})
	}
}

// A 2026-07-28 backend logs at the level each request names: a call
// carries the level its caller asked for, info when it named none.
func TestCallCarriesTheCallersLogLevel(t *testing.T) {
	c, err := DialTimeout(t.Context(), stdioConfig(t, "levels"), 20*time.Second, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		opts CallOptions
		want string
	}{
		{CallOptions{}, "none"},
		{CallOptions{Logs: true}, "info"},
		{CallOptions{Logs: true, LogLevel: "debug"}, "debug"},
	} {
		r, err := c.CallTool(t.Context(), "loglevel", nil, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.TextContent(); got != tc.want {
			t.Errorf("call with %+v asked for log level %q, want %q", tc.opts, got, tc.want)
		}
	}
}
