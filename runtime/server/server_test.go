package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// fakeCaller stands in for the dispatcher: these tests are about the
// meta-tools; tests/ drives the same server against real backends.
type fakeCaller struct{}

func (fakeCaller) CallTool(ctx context.Context, backend, tool string, args json.RawMessage) (*toolcall.Result, error) {
	switch tool {
	case "slow":
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return toolcall.Text("too late"), nil
		}
	case "big":
		var b strings.Builder
		for i := range 400 {
			if i == 200 {
				b.WriteString("The deployment failed with error E42 in region west.\n\n")
				continue
			}
			b.WriteString("routine log line about nothing in particular, number filler text\n\n")
		}
		return toolcall.Text(b.String()), nil
	}
	return toolcall.Text(backend + "." + tool + " got " + string(args)), nil
}

const schemaAB = `{"type":"object","properties":{"a":{"type":"number","description":"First"},"b":{"type":"number"}},"required":["a"]}`

func newTestServer(t *testing.T) *client.Client {
	t.Helper()
	return newTestServerWith(t, nil)
}

func newTestServerWith(t *testing.T, boost func(string) float64) *client.Client {
	t.Helper()
	return newTestServerOver(t, boost, nil)
}

// newTestServerOver serves the test registry through the real catalog,
// wrapped by wrap when it is set.
func newTestServerOver(t *testing.T, boost func(string) float64, wrap func(Catalog) Catalog) *client.Client {
	t.Helper()
	reg := registry.New()
	tools := []manifest.Tool{
		{Name: "get-sum", Description: "Returns the sum of two numbers. Handles floats too.", InputSchema: json.RawMessage(schemaAB)},
		{Name: "slow", Description: "Takes five seconds.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "big", Description: "Returns a long log.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	for i := range 12 {
		tools = append(tools, manifest.Tool{Name: "filler" + string(rune('a'+i)), Description: "Filler tool.", InputSchema: json.RawMessage(`{}`)})
	}
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "everything", Tools: tools}, true); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway(), Backends: []config.Backend{{
		Name: "everything", Transport: config.TransportStdio, Command: "node", Enabled: true,
		Env: map[string]string{"API_KEY": "sekrit-value"},
		Vars: []config.VarRef{
			{Name: "API_KEY", Key: "backends.everything.env.API_KEY", Set: true},
			{Name: "REGION", Key: "backends.everything.args[0]", Set: false},
		},
	}}}
	counter := &pipeline.Counter{}
	var cat Catalog = catalogOf(t, reg, cfg)
	if wrap != nil {
		cat = wrap(cat)
	}
	s := New(Options{
		Version: "test", Config: cfg, Registry: reg, Catalog: cat,
		Chain:   chain.New(chain.Options{Caller: fakeCaller{}, Registry: reg, Counter: counter}),
		Boost:   boost,
		Counter: counter,
	})
	c, err := client.NewInProcessClient(s.mcp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func expectText(t *testing.T, c *client.Client, tool string, args map[string]any, wantErr bool, contains, excludes []string) string {
	t.Helper()
	text, isErr := call(t, c, tool, args)
	if isErr != wantErr {
		t.Fatalf("%s(%v): isError=%v, want %v\n%s", tool, args, isErr, wantErr, text)
	}
	for _, w := range contains {
		if !strings.Contains(text, w) {
			t.Errorf("%s(%v) lacks %q:\n%s", tool, args, w, text)
		}
	}
	for _, w := range excludes {
		if strings.Contains(text, w) {
			t.Errorf("%s(%v) contains %q:\n%s", tool, args, w, text)
		}
	}
	return text
}

func TestListsSevenMetaTools(t *testing.T) {
	c := newTestServer(t)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 7 {
		t.Errorf("%d tools, want 7", len(res.Tools))
	}
}

// Each advertised field of each meta-tool changes what the tool does.
func TestEveryFieldChangesBehaviour(t *testing.T) {
	c := newTestServer(t)
	tests := []struct {
		name               string
		tool               string
		args               map[string]any
		wantErr            bool
		contains, excludes []string
	}{
		{"search task_description", "search_tools", map[string]any{"task_description": "sum of numbers"}, false,
			[]string{"everything.get-sum", `"example":"everything.get_sum({a: 1})"`, `"try_also":{"everything":[`}, nil},
		{"search brief default cuts to the first sentence", "search_tools", map[string]any{"task_description": "sum"}, false,
			[]string{"Returns the sum of two numbers."}, []string{"Handles floats", `"parameters"`}},
		{"search brief=false gives full descriptions", "search_tools", map[string]any{"task_description": "sum", "brief": false}, false,
			[]string{"Handles floats too.", `"parameters"`}, nil},
		{"search limit", "search_tools", map[string]any{"task_description": "filler tool", "limit": 2}, false,
			nil, []string{"fillerc"}},
		{"search limit out of range", "search_tools", map[string]any{"task_description": "x", "limit": 0}, true,
			[]string{"/limit", "minimum"}, nil},
		{"search missing task", "search_tools", map[string]any{}, true, []string{"task_description"}, nil},
		// Without steps, "filler tool" at limit 2 is two filler tools; the
		// step brings its own best tool in first.
		{"search steps", "search_tools", map[string]any{"task_description": "filler tool", "limit": 2, "steps": []string{"add two numbers"}}, false,
			[]string{`{"results":[{"tool":"everything.get-sum"`, "everything.filler"}, nil},
		{"search too many steps", "search_tools", map[string]any{"task_description": "x", "steps": slices.Repeat([]string{"a"}, 11)}, true,
			[]string{"/steps", "maxItems"}, nil},
		{"search empty step", "search_tools", map[string]any{"task_description": "x", "steps": []string{""}}, true,
			[]string{"/steps/0", "minLength"}, nil},
		{"list page_size", "list_tools_meta", map[string]any{"page_size": 2}, false,
			[]string{`"total": 15`, "next_cursor", "everything.big"}, []string{"everything.fillerb"}},
		{"list bad cursor", "list_tools_meta", map[string]any{"cursor": "nope"}, true, []string{"invalid cursor"}, nil},
		{"info brief", "tool_info", map[string]any{"tool_name": "get-sum"}, false,
			[]string{`"parameters"`, `"example"`}, []string{"input_schema"}},
		{"info full", "tool_info", map[string]any{"tool_name": "everything.get-sum", "detail": "full"}, false,
			[]string{`"input_schema"`, "Handles floats too."}, nil},
		{"info bad detail", "tool_info", map[string]any{"tool_name": "get-sum", "detail": "everything"}, true, []string{"/detail"}, nil},
		{"info unknown tool", "tool_info", map[string]any{"tool_name": "everything.get-summ"}, true, []string{"did you mean everything.get-sum"}, nil},
		{"keys", "get_required_keys_for_tool", map[string]any{"tool_name": "get-sum"}, false,
			[]string{`"API_KEY"`, `"REGION"`, `"all_required_set": false`, "hint"}, []string{"sekrit-value"}},
		{"chain code", "call_tool_chain", map[string]any{"code": `{"tool":"everything.get-sum","arguments":{"a":2}}`}, false,
			[]string{`everything.get-sum got {"a":2}`}, nil},
		{"chain timeout reaches the call", "call_tool_chain", map[string]any{"code": `{"tool":"everything.slow"}`, "timeout": 50}, true,
			[]string{"timed out"}, []string{"too late"}},
		{"chain max_output_size", "call_tool_chain", map[string]any{"code": `{"tool":"everything.big"}`, "max_output_size": 500}, false,
			nil, []string{strings.Repeat("routine log line about nothing in particular, number filler text\n\n", 8)}},
		{"chain intent", "call_tool_chain", map[string]any{"code": `{"tool":"everything.big"}`, "intent": "deployment error region"}, false,
			[]string{"E42"}, []string{strings.Repeat("routine log line about nothing in particular, number filler text\n\n", 3)}},
		{"chain unknown key", "call_tool_chain", map[string]any{"code": "{}", "timout": 5}, true, []string{"timout"}, nil},
		{"register without a registrar", "register_manual", map[string]any{"manual_call_template": map[string]any{"name": "x"}}, true, []string{"does not accept runtime registrations"}, nil},
		{"register bad name", "register_manual", map[string]any{"manual_call_template": map[string]any{"name": "X Y"}}, true, []string{"/manual_call_template/name"}, nil},
		{"register without name", "register_manual", map[string]any{"manual_call_template": map[string]any{"url": "http://h"}}, true, []string{"name"}, nil},
		{"deregister without a registrar", "deregister_manual", map[string]any{"manual_name": "x"}, true, []string{"does not accept runtime registrations"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectText(t, c, tc.tool, tc.args, tc.wantErr, tc.contains, tc.excludes)
		})
	}
}

func TestListPagesCoverEveryToolOnce(t *testing.T) {
	c := newTestServer(t)
	seen := map[string]int{}
	cursor := ""
	for range 20 {
		args := map[string]any{"page_size": 4}
		if cursor != "" {
			args["cursor"] = cursor
		}
		text, _ := call(t, c, "list_tools_meta", args)
		var page struct {
			Tools []struct {
				Tool string `json:"tool"`
			} `json:"tools"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(text), &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Tools {
			seen[e.Tool]++
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != 15 {
		t.Errorf("saw %d distinct tools, want 15", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"Reads a file. Then more.", 100, "Reads a file."},
		{"Version 1.2 is used. Next.", 100, "Version 1.2 is used."},
		{"读取文件。然后更多。", 100, "读取文件。"},
		{"No period at all", 100, "No period at all"},
		{"First para\n\nsecond", 100, "First para"},
		{"héllo wörld and more", 8, "héllo w…"},
		{"日本語のテキスト", 7, "日本…"},
	}
	for _, tc := range tests {
		if got := FirstSentence(tc.in, tc.max); got != tc.want {
			t.Errorf("FirstSentence(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestUsageBoostReordersEqualMatches(t *testing.T) {
	first := func(c *client.Client) string {
		text, _ := call(t, c, "search_tools", map[string]any{"task_description": "filler tool", "limit": 1})
		var body struct {
			Results []struct {
				Tool string `json:"tool"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(text), &body); err != nil || len(body.Results) != 1 {
			t.Fatalf("search answer: %v\n%s", err, text)
		}
		return body.Results[0].Tool
	}
	plain := first(newTestServer(t))
	favourite := "everything.fillerk"
	if plain == favourite {
		t.Fatalf("test needs a favourite that does not already rank first")
	}
	boosted := first(newTestServerWith(t, func(id string) float64 {
		if id == favourite {
			return 1 + 0.3*2.4 // about ten recorded uses
		}
		return 1
	}))
	if boosted != favourite {
		t.Errorf("with the boost the first hit is %s, want %s (unboosted: %s)", boosted, favourite, plain)
	}
}

func readResource(t *testing.T, c *client.Client, uri string) (string, error) {
	t.Helper()
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return "", err
	}
	return res.Contents[0].(mcp.TextResourceContents).Text, nil
}

func TestResources(t *testing.T) {
	c := newTestServer(t)
	call(t, c, "call_tool_chain", map[string]any{"code": `{"tool":"everything.big"}`, "max_output_size": 1000})
	stats, err := readResource(t, c, "kiln://stats")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Output pipeline.Snapshot `json:"call_tool_chain_output"`
	}
	if err := json.Unmarshal([]byte(stats), &body); err != nil {
		t.Fatal(err)
	}
	if body.Output.Calls != 1 || body.Output.BytesSaved <= 0 || body.Output.BytesReturned > 1000 {
		t.Errorf("kiln://stats after one shrunk call = %+v", body.Output)
	}
	detail, err := readResource(t, c, "kiln://backend/everything")
	if err != nil || !strings.Contains(detail, "everything.get-sum") || !strings.Contains(detail, `"compiled": true`) {
		t.Errorf("kiln://backend/everything = %v %s", err, detail)
	}
	if _, err := readResource(t, c, "kiln://backend/nope"); err == nil || !strings.Contains(err.Error(), "kiln://backends") {
		t.Errorf("unknown backend resource: %v", err)
	}
	list, err := readResource(t, c, "kiln://backends")
	if err != nil || !strings.Contains(list, `"name": "everything"`) {
		t.Errorf("kiln://backends = %v %s", err, list)
	}
}

// TestLongArgumentsAreNotEchoed: a megabyte argument is refused by the
// schema without being quoted back, and what an answer quotes of a
// client's string is a short prefix.
func TestLongArgumentsAreNotEchoed(t *testing.T) {
	c := newTestServer(t)
	huge := strings.Repeat("zqxj ", 200_000) // 1 MB that matches nothing
	tests := []struct {
		name, tool, arg string
		want            string
	}{
		{"search", "search_tools", "task_description", "/task_description: maxLength: got 1,000,000, want 1,000"},
		{"tool_info", "tool_info", "tool_name", "/tool_name: maxLength: got 1,000,000, want 300"},
		{"required keys", "get_required_keys_for_tool", "tool_name", "/tool_name: maxLength: got 1,000,000, want 300"},
		{"cursor", "list_tools_meta", "cursor", "/cursor: maxLength: got 1,000,000, want 100"},
		{"deregister", "deregister_manual", "manual_name", "/manual_name: maxLength: got 1,000,000, want 100"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, isErr := call(t, c, tc.tool, map[string]any{tc.arg: huge})
			if !isErr || !strings.Contains(text, tc.want) || len(text) > 1000 {
				t.Errorf("%s with a 1 MB %s: isError=%v, %d bytes, want an error saying %q:\n%.300s", tc.tool, tc.arg, isErr, len(text), tc.want, text)
			}
		})
	}
	// Within the bounds, the quotes are cut on a rune boundary.
	query := strings.Repeat("ж", 999)
	text := expectText(t, c, "search_tools", map[string]any{"task_description": query}, false, []string{"No tool matches", "…"}, nil)
	if strings.Contains(text, strings.Repeat("ж", 50)) || !utf8.ValidString(text) {
		t.Errorf("no-match answer quotes too much of the query, or cuts a character:\n%s", text)
	}
	cursor := strings.Repeat("!", 100)
	text = expectText(t, c, "list_tools_meta", map[string]any{"cursor": cursor}, true, []string{"invalid cursor", "…"}, nil)
	if strings.Contains(text, cursor) {
		t.Errorf("invalid cursor error quotes the whole cursor:\n%s", text)
	}
}

// A brief search answer says once what is the same for every hit, and each
// hit keeps its name, one-line description and call example.
func TestBriefSearchAnswerIsCompact(t *testing.T) {
	c := newTestServer(t)
	var bytes, hits int
	for _, q := range []string{"sum of numbers", "filler tool", "slow", "big log output", "numbers"} {
		text, isErr := call(t, c, "search_tools", map[string]any{"task_description": q})
		if isErr {
			t.Fatalf("search_tools(%q): %s", q, text)
		}
		var ans struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal([]byte(text), &ans); err != nil {
			t.Fatalf("search_tools(%q) is not JSON: %v\n%s", q, err, text)
		}
		if strings.Contains(text, "\n ") {
			t.Errorf("search_tools(%q) is indented:\n%s", q, text)
		}
		for _, h := range ans.Results {
			for _, k := range []string{"tool", "description", "example"} {
				if h[k] == nil || h[k] == "" {
					t.Errorf("search_tools(%q): hit %v lacks %s", q, h, k)
				}
			}
			for _, k := range []string{"backend", "try_also"} {
				if _, ok := h[k]; ok {
					t.Errorf("search_tools(%q): hit repeats %s: %v", q, k, h)
				}
			}
		}
		bytes += len(text)
		hits += len(ans.Results)
	}
	if hits == 0 || bytes/hits > 200 {
		t.Errorf("brief answers: %d bytes for %d hits, want at most 200 bytes a hit", bytes, hits)
	}
}
