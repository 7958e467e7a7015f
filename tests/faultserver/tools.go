package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits keep a mistyped argument from exhausting memory or stalling a test
// run for hours.
const (
	maxHugeBytes = 256 << 20
	maxSteps     = 10000
	maxMS        = 10 * 60 * 1000
)

// toolName is what add_tool accepts: the character set MCP recommends for
// tool names, so a rejected name is this server's answer and not the SDK's.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

type (
	echoIn struct {
		Text string `json:"text" jsonschema:"the text to send back"`
	}
	slowIn struct {
		MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds (0 to 600000)"`
	}
	hugeIn struct {
		Bytes int `json:"bytes" jsonschema:"exact size of the text result, in bytes (0 to 268435456)"`
	}
	failIn struct {
		Message string `json:"message" jsonschema:"the error text the result carries"`
	}
	progressIn struct {
		Steps int `json:"steps" jsonschema:"how many progress notifications to send (0 to 10000)"`
		MS    int `json:"ms" jsonschema:"pause before each notification, in milliseconds (0 to 600000)"`
	}
	toolNameIn struct {
		Name string `json:"name" jsonschema:"the tool name: letters, digits, underscore, hyphen or dot, at most 128"`
	}
	noIn struct{}
)

// richOut is the structured content of the rich tool; its schema is the
// tool's outputSchema.
type richOut struct {
	Summary string   `json:"summary" jsonschema:"one line describing the result"`
	Count   int      `json:"count" jsonschema:"how many content blocks the result holds"`
	Kinds   []string `json:"kinds" jsonschema:"the content block types, in order"`
}

// tools holds the server's tool set and the state its tools share.
type tools struct {
	srv     *mcp.Server
	tap     *tap
	events  *eventLog
	stderr  io.Writer
	garbage *garbage
	png     []byte

	mu    sync.Mutex
	names map[string]bool
}

func newServer(cfg config, tp *tap, events *eventLog, stderr io.Writer, g *garbage) *mcp.Server {
	opts := &mcp.ServerOptions{
		Instructions: "A test backend that fails on request; see each tool's description.",
	}
	if cfg.passthrough {
		passthroughOptions(opts, events)
	}
	if cfg.legacy {
		opts.SupportedProtocolVersions = legacyVersions
	}
	if cfg.rugPull != "" {
		rugPullCapabilities(opts)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "faultserver", Version: "1.0.0"}, opts)
	if cfg.hugeTemplate {
		addHugeTemplate(srv)
	}
	if cfg.passthrough {
		addPassthrough(srv)
	}
	if cfg.rugPull != "" {
		if err := rugPull(srv, cfg.rugPull, cfg.rugPullTool, events); err != nil {
			fmt.Fprintf(stderr, "faultserver: %v\n", err)
			os.Exit(2)
		}
		return srv
	}
	ts := &tools{srv: srv, tap: tp, events: events, stderr: stderr, garbage: g, png: tinyPNG(), names: map[string]bool{}}
	add(ts, "echo", "Returns its text argument unchanged as one text content block.", ts.echo)
	add(ts, "slow", "Sleeps for ms milliseconds, stopping early if the call is cancelled, then returns \"slept <ms>ms\".", ts.slow)
	add(ts, "hang", "Never answers: blocks until the call is cancelled or the session ends.", ts.hang)
	add(ts, "huge", "Returns one text content block of exactly bytes bytes of numbered ASCII lines.", ts.huge)
	add(ts, "crash", "Kills the server process with exit status 3 without answering.", ts.crash)
	add(ts, "fail", "Returns a tool error (isError true) whose text is message.", ts.fail)
	add(ts, "stderr", "Writes its text argument to the server's stderr, as a backend printing a secret would, then returns \"written\".", ts.writeStderr)
	add(ts, "rich", "Returns text, a PNG image, an embedded text resource and structured content matching its output schema.", ts.rich)
	add(ts, "progress", "Sends steps progress notifications to the caller's progress token, ms apart, and one info log message, then returns \"done <steps> steps\".", ts.progress)
	add(ts, "add_tool", "Adds an echo tool with the given name at run time; clients get notifications/tools/list_changed.", ts.addTool)
	add(ts, "remove_tool", "Removes the tool with the given name; clients get notifications/tools/list_changed.", ts.removeTool)
	add(ts, "ask", "Asks the client for a name (elicitation/create in form mode; an input-required result on 2026-07-28) and returns \"answer: <name>\".", ts.ask)
	add(ts, "calls", "Returns how many tools/call requests this process has received, this one included.", ts.calls)
	add(ts, "env", "Returns the names of the environment variables this process sees, sorted, one per line (never their values).", ts.env)
	return srv
}

// add registers a tool whose handler records progress tokens and
// cancellation, and writes garbage before its response when asked.
func add[In, Out any](ts *tools, name, desc string, h mcp.ToolHandlerFor[In, Out]) {
	ts.mu.Lock()
	ts.names[name] = true
	ts.mu.Unlock()
	mcp.AddTool(ts.srv, &mcp.Tool{Name: name, Description: desc}, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			raw, _ := json.Marshal(tok)
			ts.events.add("progress-token %s", rawID(raw))
		}
		res, out, err := h(ctx, req, in)
		if ctx.Err() != nil {
			ts.events.add("cancelled %s", name)
		}
		ts.garbage.line("before " + name + " response")
		return res, out, err
	})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func toolError(format string, args ...any) *mcp.CallToolResult {
	res := text(fmt.Sprintf(format, args...))
	res.IsError = true
	return res
}

// sleep waits d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ts *tools) echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

func (ts *tools) slow(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	if in.MS < 0 || in.MS > maxMS {
		return toolError("ms must be between 0 and %d, got %d", maxMS, in.MS), nil, nil
	}
	if err := sleep(ctx, time.Duration(in.MS)*time.Millisecond); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("slept %dms", in.MS)), nil, nil
}

func (ts *tools) hang(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
	// Tests cancel only after this line: a cancellation that arrives
	// before the SDK starts the handler has nothing to cancel yet.
	ts.events.add("running hang")
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (ts *tools) huge(_ context.Context, _ *mcp.CallToolRequest, in hugeIn) (*mcp.CallToolResult, any, error) {
	if in.Bytes < 0 || in.Bytes > maxHugeBytes {
		return toolError("bytes must be between 0 and %d, got %d", maxHugeBytes, in.Bytes), nil, nil
	}
	var b strings.Builder
	b.Grow(in.Bytes + 80)
	for i := 1; b.Len() < in.Bytes; i++ {
		fmt.Fprintf(&b, "line %08d of a huge result: abcdefghijklmnopqrstuvwxyz0123456789\n", i)
	}
	return text(b.String()[:in.Bytes]), nil, nil
}

func (ts *tools) crash(_ context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
	fmt.Fprintln(ts.stderr, "faultserver: crash tool called")
	ts.events.add("exit 3 crash tool")
	os.Exit(3)
	return nil, nil, nil
}

func (ts *tools) writeStderr(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	fmt.Fprintln(ts.stderr, in.Text)
	return text("written"), nil, nil
}

func (ts *tools) fail(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	return toolError("%s", in.Message), nil, nil
}

func (ts *tools) rich(_ context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, richOut, error) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "a result with every content kind"},
		&mcp.ImageContent{Data: ts.png, MIMEType: "image/png"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI:      "faultserver://rich/note.txt",
			MIMEType: "text/plain",
			Text:     "an embedded text resource",
		}},
	}}
	return res, richOut{Summary: "rich result", Count: 3, Kinds: []string{"text", "image", "resource"}}, nil
}

func (ts *tools) progress(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
	if in.Steps < 0 || in.Steps > maxSteps || in.MS < 0 || in.MS > maxMS {
		return toolError("steps must be between 0 and %d and ms between 0 and %d, got %d and %d", maxSteps, maxMS, in.Steps, in.MS), nil, nil
	}
	// Logging is deprecated in protocol 2026-07-28 but still served, and
	// kiln must relay it from older backends.
	//lint:ignore SA1019 the log notification is what this tool exists to send
	if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "faultserver", Data: "progress tool ran"}); err != nil {
		return nil, nil, fmt.Errorf("send log message: %w", err)
	}
	tok := req.Params.GetProgressToken()
	for i := 1; i <= in.Steps; i++ {
		if err := sleep(ctx, time.Duration(in.MS)*time.Millisecond); err != nil {
			return nil, nil, err
		}
		if tok == nil {
			continue
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: tok,
			Progress:      float64(i),
			Total:         float64(in.Steps),
			Message:       fmt.Sprintf("step %d", i),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("send progress %d: %w", i, err)
		}
	}
	return text(fmt.Sprintf("done %d steps", in.Steps)), nil, nil
}

func (ts *tools) addTool(_ context.Context, _ *mcp.CallToolRequest, in toolNameIn) (*mcp.CallToolResult, any, error) {
	if !toolName.MatchString(in.Name) {
		return toolError("invalid tool name %q: use 1 to 128 letters, digits, '_', '-' or '.'", in.Name), nil, nil
	}
	ts.mu.Lock()
	exists := ts.names[in.Name]
	ts.names[in.Name] = true // reserve the name before a concurrent add_tool checks it
	ts.mu.Unlock()
	if exists {
		return toolError("tool %q already exists: pick another name or remove it first", in.Name), nil, nil
	}
	add(ts, in.Name, "added at run time: returns its text argument unchanged", ts.echo)
	return text(fmt.Sprintf("added tool %s", in.Name)), nil, nil
}

func (ts *tools) removeTool(_ context.Context, _ *mcp.CallToolRequest, in toolNameIn) (*mcp.CallToolResult, any, error) {
	ts.mu.Lock()
	exists := ts.names[in.Name]
	delete(ts.names, in.Name)
	ts.mu.Unlock()
	if !exists {
		return toolError("no tool named %q to remove", in.Name), nil, nil
	}
	ts.srv.RemoveTools(in.Name)
	return text(fmt.Sprintf("removed tool %s", in.Name)), nil, nil
}

func (ts *tools) calls(_ context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
	return text(fmt.Sprint(ts.tap.calls.Load())), nil, nil
}

// tinyPNG encodes a 2x2 image, so the rich tool's image is a PNG any decoder
// accepts rather than bytes that merely claim to be one.
// env lists names only: tests check what a backend inherits, and values
// could be secrets.
func (ts *tools) env(_ context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	return text(strings.Join(names, "\n")), nil, nil
}

func tinyPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.NRGBA{R: 255, A: 255})
	img.Set(1, 1, color.NRGBA{B: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(fmt.Sprintf("encode png: %v", err)) // programmer error: an in-memory encode cannot fail
	}
	return b.Bytes()
}
