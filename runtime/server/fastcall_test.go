package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

const (
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}}}`
	chainCall = `"arguments":{"code":"{\"tool\":\"everything.get-sum\",\"arguments\":{\"a\":1,\"b\":2}}"}`
)

// TestFastCallAnswersAsHandleMessage checks that every tools/call the read
// loop serves itself gets the bytes mcp-go's HandleMessage would write,
// and that what it does not serve is left to HandleMessage.
func TestFastCallAnswersAsHandleMessage(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	cases := []struct {
		name, params string
		fast         bool
	}{
		{"modern tool_info", `{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"},` + modernMeta + `}`, true},
		{"legacy tool_info", `{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"}}`, true},
		{"modern chain", `{"name":"call_tool_chain",` + chainCall + `,` + modernMeta + `}`, true},
		{"legacy chain", `{"name":"call_tool_chain",` + chainCall + `}`, true},
		{"invalid arguments", `{"name":"tool_info","arguments":{"tool_name":7},` + modernMeta + `}`, true},
		{"legacy version in _meta", `{"name":"tool_info","arguments":{"tool_name":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}`, true},
		{"modern chain again (kept _meta)", `{"name":"call_tool_chain",` + chainCall + `,` + modernMeta + `}`, true},
		{"progress token", `{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"},"_meta":{"progressToken":"p1"}}`, true},
		{"_meta not an object", `{"name":"tool_info","arguments":{},"_meta":5}`, false},
		{"unknown tool", `{"name":"nope","arguments":{}}`, false},
		{"modern without capabilities", `{"name":"tool_info","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, false},
		{"unknown modern version", `{"name":"tool_info","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, false},
		{"task-augmented", `{"name":"tool_info","arguments":{},"task":{"ttl":1000}}`, false},
		{"params not an object", `[]`, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprint(i + 1)
			line := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + c.params + `}`)
			got, ok := s.fastCall(t.Context(), json.RawMessage(id), line)
			if ok != c.fast {
				t.Fatalf("served itself = %v, want %v (%s)", ok, c.fast, got)
			}
			if !ok {
				return
			}
			want, err := json.Marshal(s.mcp.HandleMessage(t.Context(), line))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("answer differs from HandleMessage's\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// TestStdioCancelReachesFastCall checks that notifications/cancelled stops
// a tools/call the read loop serves itself; the call waits on a backend
// call that only a cancellation ends (fakeCaller's slow tool).
func TestStdioCancelReachesFastCall(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sdk := &lockedBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l := s.runStdioLoop(ctx, inR, outW, sdk)
	slow := `{\"tool\":\"everything.slow\",\"arguments\":{}}`
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"call_tool_chain","arguments":{"code":"%s","timeout":60000},%s}}`+"\n", slow, modernMeta)
	cancelLine := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"test"}}` + "\n"
	fmt.Fprint(inW, cancelLine)
	raw, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		ID     string `json:"id"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.ID != "c1" || !resp.Result.IsError ||
		len(resp.Result.Content) == 0 || !strings.Contains(resp.Result.Content[0].Text, "cancel") {
		t.Errorf("answer to the canceled call: %s (%v), want an isError result saying it was canceled", raw, err)
	}
	inW.Close()
	<-l.read
	l.stop()
	if got := sdk.String(); got != cancelLine {
		t.Errorf("the SDK got %q, want the cancellation too", got)
	}
}

// TestFastCallLeavesHookedServersToHandleMessage checks that a per-request
// hook, which only HandleMessage runs, sends every call there.
func TestFastCallLeavesHookedServersToHandleMessage(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_info","arguments":{"tool_name":"everything.get-sum"}}}`)
	if _, ok := s.fastCall(t.Context(), json.RawMessage("1"), line); !ok {
		t.Fatal("a plain call was left to HandleMessage")
	}
	s.hooks.AddBeforeCallTool(func(context.Context, any, *mcp.CallToolRequest) {})
	if _, ok := s.fastCall(t.Context(), json.RawMessage("1"), line); ok {
		t.Error("a call was served past a before-call hook")
	}
}

// TestInflightKeepsReusedIDCancelable checks that when a client reuses the
// id of a call still running, the first call ending does not make the
// second one deaf to notifications/cancelled.
func TestInflightKeepsReusedIDCancelable(t *testing.T) {
	var f inflight
	first, cancelFirst := context.WithCancel(t.Context())
	defer cancelFirst()
	second, cancelSecond := context.WithCancel(t.Context())
	defer cancelSecond()
	h1 := f.add("7", cancelFirst)
	h2 := f.add("7", cancelSecond)
	f.remove("7", h1)
	f.cancel([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	if second.Err() == nil {
		t.Error("the second call with id 7 was not canceled")
	}
	if first.Err() != nil {
		t.Error("the first call, already ended, was canceled")
	}
	f.remove("7", h2)
	if len(f.all) != 0 {
		t.Errorf("%d entries left after both calls ended", len(f.all))
	}
}
