package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/toolcall"
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

func TestUnknownRequestStateIsRefused(t *testing.T) {
	s := New(Options{})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}
	req.Params.RequestState = "forged"
	out, ask := s.resumable(t.Context(), req, json.RawMessage(`{}`), func(context.Context, json.RawMessage) *toolcall.Result {
		t.Fatal("a forged requestState started a run")
		return nil
	})
	if ask != nil || out == nil || !out.IsError || !strings.Contains(out.TextContent(), "call again without requestState") {
		t.Errorf("got %+v, %+v; want an error saying to call again", out, ask)
	}
}

// A run that asks twice is answered over two rounds, each with the
// questions not yet seen, and ends with the run's own result.
func TestExchangeRounds(t *testing.T) {
	s := New(Options{})
	run := func(ctx context.Context, _ json.RawMessage) *toolcall.Result {
		c := dispatchClient(ctx)
		a, err := c.ClientRequest(ctx, "roots/list", json.RawMessage(`{}`))
		if err != nil {
			return toolcall.Errorf("%v", err)
		}
		b, err := c.ClientRequest(ctx, "roots/list", json.RawMessage(`{}`))
		if err != nil {
			return toolcall.Errorf("%v", err)
		}
		return toolcall.Text(string(a) + "|" + string(b))
	}
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}
	var answers []string
	for round := 1; ; round++ {
		out, ask := s.resumable(ctx, req, nil, run)
		if out != nil {
			if want := `{"roots":[{"uri":"file:///r1"}]}|{"roots":[{"uri":"file:///r2"}]}`; out.TextContent() != want {
				t.Errorf("result %q, want %q", out.TextContent(), want)
			}
			break
		}
		if round > 2 || len(ask.InputRequests) != 1 || ask.RequestState == "" {
			t.Fatalf("round %d: %+v", round, ask)
		}
		responses := mcp.InputResponses{}
		for id := range ask.InputRequests {
			var r mcp.InputResponse
			_ = r.UnmarshalJSON([]byte(fmt.Sprintf(`{"roots":[{"uri":"file:///r%d"}]}`, round)))
			responses[id] = r
			answers = append(answers, id)
		}
		req.Params.RequestState, req.Params.InputResponses = ask.RequestState, responses
	}
	if len(answers) != 2 || answers[0] == answers[1] {
		t.Errorf("questions %v, want two distinct ones", answers)
	}
}

// dispatchClient is the client session observe put into ctx for the run.
func dispatchClient(ctx context.Context) dispatch.ClientSession {
	return dispatch.ObserverFrom(ctx).Client
}

// TestInlineRunAnswersItsFirstRoundEarly: a run started where the request
// can be answered early (the stdio read loop) runs on the request's own
// goroutine; its first question answers the request at once, and the
// rounds after it go on through requestState as for any run.
func TestInlineRunAnswersItsFirstRoundEarly(t *testing.T) {
	s := New(Options{})
	asks := func(ctx context.Context, _ json.RawMessage) *toolcall.Result {
		a, err := dispatchClient(ctx).ClientRequest(ctx, "roots/list", json.RawMessage(`{}`))
		if err != nil {
			return toolcall.Errorf("%v", err)
		}
		b, err := dispatchClient(ctx).ClientRequest(ctx, "roots/list", json.RawMessage(`{}`))
		if err != nil {
			return toolcall.Errorf("%v", err)
		}
		return toolcall.Text(string(a) + "|" + string(b))
	}
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}

	t.Run("asks nothing", func(t *testing.T) {
		ea := &earlyAnswer{send: func(*mcp.CallToolResult) { t.Error("answered early by a run that asked nothing") }}
		out, ask := s.resumable(withEarlyAnswer(ctx, ea), req, nil, func(context.Context, json.RawMessage) *toolcall.Result {
			return toolcall.Text("done")
		})
		if ask != nil || out == nil || out.TextContent() != "done" {
			t.Errorf("resumable = %+v, %+v; want the run's result", out, ask)
		}
	})

	t.Run("asks twice", func(t *testing.T) {
		sent := make(chan *mcp.CallToolResult, 2)
		ea := &earlyAnswer{send: func(r *mcp.CallToolResult) { sent <- r }}
		returned := make(chan *mcp.CallToolResult, 1)
		go func() {
			_, ask := s.resumable(withEarlyAnswer(ctx, ea), req, nil, asks)
			returned <- ask
		}()
		ask := <-sent
		for round := 1; ; round++ {
			if round > 2 || len(ask.InputRequests) != 1 || ask.RequestState == "" {
				t.Fatalf("round %d: %+v", round, ask)
			}
			responses := mcp.InputResponses{}
			for id := range ask.InputRequests {
				var r mcp.InputResponse
				_ = r.UnmarshalJSON(fmt.Appendf(nil, `{"roots":[{"uri":"file:///r%d"}]}`, round))
				responses[id] = r
			}
			retry := req
			retry.Params.RequestState, retry.Params.InputResponses = ask.RequestState, responses
			var out *toolcall.Result
			if out, ask = s.resumable(ctx, retry, nil, asks); out != nil {
				if want := `{"roots":[{"uri":"file:///r1"}]}|{"roots":[{"uri":"file:///r2"}]}`; out.TextContent() != want {
					t.Errorf("result %q, want %q", out.TextContent(), want)
				}
				break
			}
		}
		if got := <-returned; got != answeredEarly {
			t.Errorf("the first request's handler returned %+v, want answeredEarly (its answer was sent)", got)
		}
		if len(sent) != 0 {
			t.Error("answered early twice")
		}
	})

	t.Run("canceled before it asks", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		ea := &earlyAnswer{send: func(*mcp.CallToolResult) { t.Error("answered early after a cancellation") }}
		out, _ := s.resumable(withEarlyAnswer(cctx, ea), req, nil, func(run context.Context, _ json.RawMessage) *toolcall.Result {
			cancel()
			<-run.Done() // the client's cancellation ends the run
			return toolcall.Errorf("stopped")
		})
		if out == nil || !out.IsError || !strings.Contains(out.TextContent(), "canceled by the client") {
			t.Errorf("resumable = %+v, want canceled by the client", out)
		}
	})
}

// TestInlineRunPanicAfterItsEarlyAnswer: a run that panics once its
// request was answered gives the panic to the next round as an error; the
// request is not answered twice and the round does not hang.
func TestInlineRunPanicAfterItsEarlyAnswer(t *testing.T) {
	s := New(Options{})
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}
	sent := make(chan *mcp.CallToolResult, 2)
	answered := make(chan struct{})
	ea := &earlyAnswer{send: func(r *mcp.CallToolResult) { sent <- r; close(answered) }}
	returned := make(chan *mcp.CallToolResult, 1)
	go func() {
		_, ask := s.resumable(withEarlyAnswer(ctx, ea), req, nil, func(run context.Context, _ json.RawMessage) *toolcall.Result {
			go func() { _, _ = dispatchClient(run).ClientRequest(run, "roots/list", json.RawMessage(`{}`)) }()
			<-answered
			panic("boom")
		})
		returned <- ask
	}()
	first := <-sent
	if got := <-returned; got != answeredEarly {
		t.Fatalf("the first request's handler returned %+v, want answeredEarly", got)
	}
	retry := req
	retry.Params.RequestState = first.RequestState
	out, ask := s.resumable(ctx, retry, nil, nil)
	if ask != nil || out == nil || !out.IsError || !strings.Contains(out.TextContent(), "internal error") {
		t.Errorf("next round = %+v, %+v; want the panic as an internal error", out, ask)
	}
}

// TestRunnerPanicIsTheRunsResult: a 2026-07-28 run that cannot be
// answered early goes on a runner, a goroutine of its own, where a panic
// would have ended the whole process; it is the run's result instead, and
// logged with its stack.
func TestRunnerPanicIsTheRunsResult(t *testing.T) {
	logs := &lockedBuffer{}
	s := New(Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}
	out, ask := s.resumable(ctx, req, nil, func(context.Context, json.RawMessage) *toolcall.Result {
		panic("boom")
	})
	if ask != nil || out == nil || !out.IsError || !strings.Contains(out.TextContent(), "internal error") {
		t.Errorf("got %+v, %+v; want the panic as an internal error", out, ask)
	}
	if log := logs.String(); !strings.Contains(log, "the run of call_tool_chain stopped") || !strings.Contains(log, "boom") || !strings.Contains(log, "stack=") {
		t.Errorf("the panic was not logged with its stack:\n%s", log)
	}
}

// TestInlineRunCanceledDoesNotAsk: a run the client canceled that asks
// anyway does not answer the canceled request with its question.
func TestInlineRunCanceledDoesNotAsk(t *testing.T) {
	s := New(Options{})
	ctx := server.WithRequestProtocolInfo(t.Context(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}}})
	cctx, cancel := context.WithCancel(ctx)
	ea := &earlyAnswer{send: func(*mcp.CallToolResult) { t.Error("a canceled request was answered with a question") }}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: toolChain}}
	out, _ := s.resumable(withEarlyAnswer(cctx, ea), req, nil, func(run context.Context, _ json.RawMessage) *toolcall.Result {
		cancel()
		<-run.Done()
		_, err := dispatchClient(run).ClientRequest(run, "roots/list", json.RawMessage(`{}`))
		return toolcall.Errorf("%v", err)
	})
	if out == nil || !strings.Contains(out.TextContent(), "canceled by the client") {
		t.Errorf("resumable = %+v, want canceled by the client", out)
	}
	s.exchanges.mu.Lock()
	defer s.exchanges.mu.Unlock()
	if n := len(s.exchanges.all); n != 0 {
		t.Errorf("%d exchanges kept after a canceled run", n)
	}
}
