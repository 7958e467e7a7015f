package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
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

// TestAppendCallResponseMatchesSDK checks fastCall's own encoding against
// the SDK's (toMCP, decorate, json.Marshal) on results the SDK would write
// differently byte for byte: the same members and values, on one line.
func TestAppendCallResponseMatchesSDK(t *testing.T) {
	s := newStdioTestServer(t, slog.New(slog.DiscardHandler))
	results := []*toolcall.Result{
		{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"Echo: <hi> & bye"}`)}},
		{Content: []json.RawMessage{json.RawMessage("{\n  \"type\": \"text\",\n  \"text\": \"a\\nb\"\n}")}, IsError: true},
		{Content: []json.RawMessage{}, StructuredContent: json.RawMessage(`{"n": [1, 2.50, {"x": null}]}`), Meta: json.RawMessage(`{"kiln/tier":1}`)},
		{Content: []json.RawMessage{json.RawMessage(`{"type":"image","data":"aGk=","mimeType":"image/png"}`), json.RawMessage(`{"type":"text","text":"x"}`)},
			Meta: json.RawMessage(`{"progressToken":"p","z":{"deep":[true]}}`), StructuredContent: json.RawMessage(`null`)},
		{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"é\u2028"}`)}, Meta: json.RawMessage(`{}`)},
		{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}, Meta: json.RawMessage("{\n  \"trace\": \"abc\"\n}")},
		{Content: []json.RawMessage{}, Meta: json.RawMessage("{\n}")},
		{Content: []json.RawMessage{}, Meta: json.RawMessage("{ }")},
		{Content: []json.RawMessage{}, Meta: json.RawMessage("{ \"a\": [1, 2] }")},
	}
	for _, modern := range []bool{false, true} {
		for i, r := range results {
			for _, id := range []string{`7`, `"abc"`, `-12`} {
				got, ok := appendCallResponse(nil, json.RawMessage(id), r, modern, s.serverInfoJSON())
				if !ok {
					t.Fatalf("result %d (modern %v, id %s): not written", i, modern, id)
				}
				if strings.ContainsAny(string(got), "\n\r") {
					t.Errorf("result %d: the answer spans lines: %s", i, got)
				}
				res, err := toMCP(r)
				if err != nil {
					t.Fatal(err)
				}
				if modern {
					s.decorate(res)
				}
				var idValue any
				_ = json.Unmarshal([]byte(id), &idValue)
				want, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idValue), res))
				if err != nil {
					t.Fatal(err)
				}
				if !json.Valid(got) {
					t.Fatalf("result %d (modern %v): not JSON: %s", i, modern, got)
				}
				if !sameJSON(t, got, want) {
					t.Errorf("result %d (modern %v, id %s):\n got: %s\nwant: %s", i, modern, id, got, want)
				}
			}
		}
	}
	// What it cannot write as the SDK does, it leaves to the SDK.
	for _, tc := range []struct {
		id string
		r  *toolcall.Result
	}{
		{`1.0`, results[0]}, {`1e2`, results[0]}, {`"a\"b"`, results[0]}, {`12345678901234567890`, results[0]},
		{`1`, &toolcall.Result{Content: []json.RawMessage{json.RawMessage(`{"type":`)}}},
		{`1`, &toolcall.Result{Meta: json.RawMessage(`[1]`)}},
	} {
		if got, ok := appendCallResponse(nil, json.RawMessage(tc.id), tc.r, false, s.serverInfoJSON()); ok {
			t.Errorf("id %s, result %+v: written as %s, want it left to the SDK", tc.id, tc.r, got)
		}
	}
	if _, ok := appendCallResponse(nil, json.RawMessage(`1`), &toolcall.Result{Meta: json.RawMessage(`{"io.modelcontextprotocol/serverInfo":{"name":"b"}}`)}, true, s.serverInfoJSON()); ok {
		t.Error("a _meta naming its own serverInfo is written: decorate keeps it, the SDK must write it")
	}
}

// TestScanCallLineReadsAsTheDecoder checks the scan against encoding/json
// on the lines it reads and that it leaves the ones it cannot to the
// decoder.
func TestScanCallLineReadsAsTheDecoder(t *testing.T) {
	for _, tc := range []struct {
		line    string
		scanned bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":{"x":"<y>"},` + modernMeta + `}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u002eb","arguments":null,"task":null}}`, true},
		{` {"params":{"task":{"ttl":1},"name":"x"},"jsonrpc":"2.0","result":null} `, true},
		{`{"jsonrpc":"2.0","params":[]}`, true},
		{`{"jsonrpc":"2.0","Params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","params":{"Name":"x"}}`, false},
		{`{"jsonrpc":"2.0","params":{"n\u0061me":"x"}}`, false},
		{`{"jsonrpc":"2.0","params":{"name":"x"},"params":{"arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","params":{"name":"x","requestState":"s"}}`, false},
		{`{"jsonrpc":"2.0","params":{"name":5}}`, false},
		{`{"jsonrpc":"2.0","params":{"name":"x"}`, false},
	} {
		var scanned, decoded callLine
		if got := scanCallLine([]byte(tc.line), &scanned); got != tc.scanned {
			t.Errorf("%s: scanned = %v, want %v", tc.line, got, tc.scanned)
			continue
		}
		if !tc.scanned {
			continue
		}
		if !decodeCallLine([]byte(tc.line), &decoded) {
			if scanned.params {
				t.Errorf("%s: scanned, but the decoder refuses it", tc.line)
			}
			continue
		}
		scanned.arguments, decoded.arguments = compactOf(scanned.arguments), compactOf(decoded.arguments)
		scanned.meta, decoded.meta = compactOf(scanned.meta), compactOf(decoded.meta)
		if fmt.Sprint(scanned) != fmt.Sprint(decoded) {
			t.Errorf("%s:\n scanned %+v\n decoded %+v", tc.line, scanned, decoded)
		}
	}
}

func compactOf(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(raw []byte) any {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

func TestDecodeChainArgsAsTheDecoder(t *testing.T) {
	for _, raw := range []string{
		`{"code":"{\"tool\":\"a.b\"}"}`, ` {"code":"x","timeout":5000,"max_output_size":100,"intent":"err\u00e9"} `,
		`{"code":"x","timeout":null}`, `{"code":"x","timeout":1.0}`, `{"code":"x","timeout":99999999999999999999}`,
		`{"c\u006fde":"x"}`, `{"Code":"x"}`, `{"code":"a","code":"b"}`, `{"code":5}`, `[]`, `{"code":"x","timeout":-1}`,
	} {
		got, gotErr := decodeChainArgs(json.RawMessage(raw))
		var want chainArgs
		wantErr := json.Unmarshal([]byte(raw), &want)
		if (gotErr != nil) != (wantErr != nil) || fmt.Sprintf("%+v", deref(got)) != fmt.Sprintf("%+v", deref(want)) {
			t.Errorf("%s: got %+v (%v), the decoder %+v (%v)", raw, deref(got), gotErr, deref(want), wantErr)
		}
	}
}

func deref(a chainArgs) []any {
	out := []any{a.Code, a.Intent}
	if a.Timeout != nil {
		out = append(out, *a.Timeout)
	}
	if a.MaxOutputSize != nil {
		out = append(out, "max", *a.MaxOutputSize)
	}
	return out
}
