//go:build e2e

package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// These tests send kiln what no client library will: malformed, oversized
// and out-of-order JSON-RPC, over raw pipes and raw HTTP. Each step is
// followed by tools/list on the same session, which must still work.
// runtime/server's FuzzJSONRPC and TestStdioProtocolEdges cover the same
// ground in process, message by message.

const initializeParams = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kiln-e2e-raw","version":"1"}}`

// rpcReply is one JSON-RPC response as it came over the wire.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// outcome summarizes a reply for comparison: "result", "tool-error" (a
// tool result with isError) or "error <code>".
func (r rpcReply) outcome() string {
	if r.Error != nil {
		return fmt.Sprintf("error %d", r.Error.Code)
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(r.Result, &res)
	if res.IsError {
		return "tool-error"
	}
	return "result"
}

// text joins the text blocks of a tool result.
func (r rpcReply) text() string {
	var res struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
	}
	_ = json.Unmarshal(r.Result, &res)
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolNames reads a tools/list result, sorted.
func (r rpcReply) toolNames(t *testing.T) []string {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("tools/list: error %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("tools/list result: %v\n%s", err, r.Result)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func request(id, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
}

// rawStdio is `kiln serve` on stdio, driven line by line.
type rawStdio struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan []byte
	next  int // for tools/list ids
}

func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(kilnBin(t), append([]string{"serve"}, args...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = ownState(t, args)
	cmd.Stderr = testWriter{t, "kiln"}
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawStdio{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 64)}
	go func() {
		defer close(s.lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	return s
}

// send writes one line.
func (s *rawStdio) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to kiln: %v", err)
	}
}

// await returns the next response whose id is id (raw JSON, "null" for a
// parse error), skipping notifications.
func (s *rawStdio) await(id string) rpcReply {
	s.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("kiln closed stdout while a response to id %s was due", id)
			}
			var r rpcReply
			if err := json.Unmarshal(line, &r); err != nil {
				s.t.Fatalf("kiln wrote a line that is not JSON: %v\n%.300s", err, line)
			}
			if string(r.ID) == id {
				return r
			}
			if r.ID != nil {
				s.t.Errorf("unexpected response while waiting for id %s: %.300s", id, line)
			}
		case <-timeout:
			s.t.Fatalf("no response to id %s within 60s", id)
		}
	}
}

// call sends line and awaits the response to id.
func (s *rawStdio) call(line, id string) rpcReply {
	s.t.Helper()
	s.send(line)
	return s.await(id)
}

// listTools checks the session still lists the meta-tools.
func (s *rawStdio) listTools() {
	s.t.Helper()
	s.next++
	id := fmt.Sprintf(`"list-%d"`, s.next)
	if diff := cmp.Diff(metaTools, s.call(request(id, "tools/list", ""), id).toolNames(s.t)); diff != "" {
		s.t.Errorf("tools/list afterwards (-want +got):\n%s", diff)
	}
}

func TestProtocolErrorsOverStdio(t *testing.T) {
	s := startRawStdio(t, "--config", peerConfig(t, peerOptions{OnlyEverything: true}))
	pad := strings.Repeat("a", 10<<20)
	tests := []struct {
		name        string
		line        string
		id          string
		want        string
		wantText    []string // for tool results
		initializes bool
	}{
		// mcp-go serves requests before initialize, which MCP permits (the
		// client SHOULD NOT send them); this process has not seen one yet.
		{name: "tools/call before initialize", id: "1", want: "result", wantText: []string{"everything.echo"},
			line: request("1", "tools/call", `{"name":"search_tools","arguments":{"task_description":"echo a message"}}`)},
		{name: "initialize", id: "2", want: "result", line: request("2", "initialize", initializeParams), initializes: true},
		{name: "initialize again", id: "3", want: "result", line: request("3", "initialize", initializeParams)},
		{name: "malformed JSON", id: "null", want: "error -32700", line: `{"jsonrpc":"2.0","id":4,"method":`},
		{name: "unknown method", id: "5", want: "error -32601", line: request("5", "tools/frobnicate", "")},
		// kiln validates meta-tool arguments itself and answers with a tool
		// result a model can act on, not a protocol error.
		{name: "meta-tool argument of the wrong type", id: "6", want: "tool-error", wantText: []string{"/task_description", "string"},
			line: request("6", "tools/call", `{"name":"search_tools","arguments":{"task_description":7}}`)},
		{name: "meta-tool arguments not an object", id: "7", want: "tool-error", wantText: []string{"search_tools"},
			line: request("7", "tools/call", `{"name":"search_tools","arguments":"echo"}`)},
		// mcp-go answers params it cannot decode with -32600 Invalid
		// Request; JSON-RPC reserves -32602 Invalid params for this.
		{name: "tools/call params of the wrong type", id: "8", want: "error -32600",
			line: request("8", "tools/call", `{"name":5}`)},
		{name: "unknown tool", id: "9", want: "error -32602", line: request("9", "tools/call", `{"name":"nope","arguments":{}}`)},
		{name: "10 MB request", id: `"big"`, want: "result", line: request(`"big"`, "ping", `{"_meta":{"pad":"`+pad+`"}}`)},
		{name: "10 MB of garbage", id: "null", want: "error -32700", line: pad},
		// kiln refuses, before mcp-go sees them, what mcp-go would call
		// "not valid json" or serve as if nothing were wrong.
		{name: "batch", id: "null", want: "error -32600", wantText: []string{"batches are not supported"},
			line: "[" + request("10", "ping", "") + "]"},
		{name: "100k-deep arrays", id: "null", want: "error -32700", wantText: []string{"nesting too deep (limit 512 levels)"},
			line: strings.Repeat("[", 100000) + strings.Repeat("]", 100000)},
		{name: "deep params", id: "11", want: "error -32600", wantText: []string{"nesting too deep"},
			line: request("11", "ping", strings.Repeat(`{"a":`, 600)+"1"+strings.Repeat("}", 600))},
		{name: "object id", id: "null", want: "error -32600", wantText: []string{"id must be a string or a number, got an object"},
			line: `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`},
		{name: "boolean id", id: "null", want: "error -32600", wantText: []string{"got a boolean"},
			line: `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			r := s.call(tc.line, tc.id)
			if got := r.outcome(); got != tc.want {
				t.Errorf("outcome %s, want %s: %+v %.300s", got, tc.want, r.Error, r.Result)
			}
			text := r.text()
			if r.Error != nil {
				text = r.Error.Message
			}
			for _, w := range tc.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("reply lacks %q: %s", w, text)
				}
			}
			if tc.initializes {
				s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			s.listTools()
		})
	}
	// Having answered every step, kiln ends cleanly when its client does.
	s.t = t
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("kiln serve after stdin closed: %v", err)
	}
}

// rawHTTP is a streamable HTTP session driven with net/http.
type rawHTTP struct {
	url     string
	session string
	header  http.Header // added to every request
	next    int
}

// post sends body and returns the status, headers and the JSON-RPC reply
// when there is one (a JSON body or the response event of an SSE stream).
func (h *rawHTTP) post(t *testing.T, body []byte) (*http.Response, *rpcReply, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.url+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range h.header {
		req.Header[k] = v
	}
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	payloads := [][]byte{raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		payloads = nil
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				payloads = append(payloads, bytes.TrimSpace(data))
			}
		}
	}
	for _, p := range payloads {
		var r rpcReply
		if json.Unmarshal(p, &r) == nil && r.ID != nil {
			return resp, &r, raw
		}
	}
	return resp, nil, raw
}

// initialize opens the session.
func (h *rawHTTP) initialize(t *testing.T) {
	t.Helper()
	resp, r, raw := h.post(t, []byte(request("0", "initialize", initializeParams)))
	if resp.StatusCode != http.StatusOK || r == nil || r.Error != nil {
		t.Fatalf("initialize: %s %s", resp.Status, raw)
	}
	if h.session = resp.Header.Get("Mcp-Session-Id"); h.session == "" {
		t.Fatal("initialize answered without an Mcp-Session-Id")
	}
	if resp, _, raw := h.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s %s", resp.Status, raw)
	}
}

func (h *rawHTTP) listTools(t *testing.T) {
	t.Helper()
	h.next++
	id := fmt.Sprintf(`"list-%d"`, h.next)
	resp, r, raw := h.post(t, []byte(request(id, "tools/list", "")))
	if resp.StatusCode != http.StatusOK || r == nil {
		t.Fatalf("tools/list afterwards: %s %s", resp.Status, raw)
	}
	if diff := cmp.Diff(metaTools, r.toolNames(t)); diff != "" {
		t.Errorf("tools/list afterwards (-want +got):\n%s", diff)
	}
}

func TestProtocolErrorsOverHTTP(t *testing.T) {
	const maxBody = 64 << 10
	cfg := peerConfig(t, peerOptions{OnlyEverything: true, Gateway: "  http:\n    max_body: 64KiB"})
	h := &rawHTTP{url: startHTTP(t, "--config", cfg)}

	// mcp-go answers a request without a session with 404 "Invalid
	// session ID", as for an expired session; the transport spec asks for
	// 400 when the header is missing. Either way the client re-initializes.
	resp, r, raw := h.post(t, []byte(request("1", "tools/call", `{"name":"search_tools","arguments":{"task_description":"echo"}}`)))
	if resp.StatusCode != http.StatusNotFound || r != nil {
		t.Errorf("tools/call before initialize: %s %s", resp.Status, raw)
	}
	h.initialize(t)
	h.listTools(t)

	tests := []struct {
		name     string
		body     string
		status   int
		want     string // outcome of the JSON-RPC reply
		wantText []string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":2,"method":`, http.StatusBadRequest, "error -32700", nil},
		{"unknown method", request("3", "tools/frobnicate", ""), http.StatusOK, "error -32601", nil},
		{"meta-tool argument of the wrong type", request("4", "tools/call", `{"name":"search_tools","arguments":{"task_description":7}}`),
			http.StatusOK, "tool-error", []string{"/task_description", "string"}},
		{"tools/call params of the wrong type", request("5", "tools/call", `{"name":5}`), http.StatusOK, "error -32600", nil},
		{"initialize again on the session", request("6", "initialize", initializeParams), http.StatusOK, "result", nil},
		// The guard refuses a body over gateway.http.max_body before
		// kiln reads it, with a JSON-RPC error a client can show.
		{"body over max_body", request("7", "ping", `{"_meta":{"pad":"`+strings.Repeat("a", maxBody)+`"}}`),
			http.StatusRequestEntityTooLarge, "error -32600", []string{"gateway.http.max_body"}},
		{"batch", "[" + request("8", "ping", "") + "]", http.StatusBadRequest, "error -32600",
			[]string{"batches are not supported (protocol 2025-06-18 and later removed them); send one request per message"}},
		// Valid JSON nested too deep is an invalid request; past the
		// 10,000 levels Go's decoder reads it is a parse error.
		{"10k-deep arrays", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), http.StatusBadRequest, "error -32600",
			[]string{"nesting too deep (limit 512 levels)"}},
		{"20k-deep arrays", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), http.StatusBadRequest, "error -32700",
			[]string{"nesting too deep (limit 512 levels)"}},
		{"deep params", request("9", "ping", strings.Repeat("[", 600)+strings.Repeat("]", 600)), http.StatusBadRequest, "error -32600",
			[]string{"nesting too deep"}},
		{"object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, http.StatusBadRequest, "error -32600",
			[]string{"id must be a string or a number, got an object"}},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, http.StatusBadRequest, "error -32600", []string{"got an array"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, r, raw := h.post(t, []byte(tc.body))
			if resp.StatusCode != tc.status {
				t.Errorf("status %s, want %d: %.300s", resp.Status, tc.status, raw)
			}
			if r == nil {
				t.Fatalf("no JSON-RPC reply: %.300s", raw)
			}
			if got := r.outcome(); got != tc.want {
				t.Errorf("outcome %s, want %s: %.300s", got, tc.want, raw)
			}
			text := r.text()
			if r.Error != nil {
				text = r.Error.Message
			}
			for _, w := range tc.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("reply lacks %q: %s", w, text)
				}
			}
			h.listTools(t)
		})
	}
}
