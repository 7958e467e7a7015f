package backend

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The test binary doubles as a real MCP server (mcp-go over stdio) when
// KILN_TEST_SERVER is set, so these tests talk to a real process.

const anyOfSchema = `{"$comment":"kept verbatim","anyOf":[{"required":["a"]},{"required":["b"]}],` +
	`"properties":{"a":{"type":"string"},"b":{"type":"integer"}},"type":"object"}`

func testServer() *server.MCPServer {
	s := server.NewMCPServer("kiln-test-server", "1.2.3",
		server.WithToolCapabilities(true), server.WithPaginationLimit(2))
	s.AddTool(mcp.NewToolWithRawSchema("either", "Takes a or b.", json.RawMessage(anyOfSchema)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(string(req.Params.RawArguments)), nil
		})
	s.AddTool(mcp.NewTool("image", mcp.WithDescription("A tiny image.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("here"), mcp.NewImageContent("iVBORw0KGgo=", "image/png"),
			}}, nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Always fails.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("quota exhausted"), nil
		})
	s.AddTool(mcp.NewTool("structured", mcp.WithDescription("Structured output.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"temp": 21.5, "unit": "C"}, `{"temp":21.5,"unit":"C"}`), nil
		})
	s.AddTool(mcp.NewTool("env", mcp.WithDescription("Reads GITHUB_TOKEN.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(os.Getenv("GITHUB_TOKEN") + "|" + os.Getenv("github_token")), nil
		})
	s.AddTool(mcp.NewTool("environ", mcp.WithDescription("Lists the names of the process's environment variables.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var names []string
			for _, kv := range os.Environ() {
				name, _, _ := strings.Cut(kv, "=")
				names = append(names, name)
			}
			return mcp.NewToolResultText(strings.Join(names, "\n")), nil
		})
	s.AddTool(mcp.NewTool("spawn", mcp.WithDescription("Starts a child that outlives a plain kill of this process.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			child := exec.Command("sleep", "300")
			if err := child.Start(); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(strconv.Itoa(child.Process.Pid)), nil
		})
	s.AddTool(mcp.NewTool("ask", mcp.WithDescription("Elicits a name (input-required on 2026-07-28) and returns it.")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := server.ElicitationResponse(req.Params.InputResponses, "name"); r != nil {
				return mcp.NewToolResultText(fmt.Sprintf("%s:%v", r.Action, r.Content)), nil
			}
			return server.NewInputRequestBuilder("st").Elicit("name", mcp.ElicitationParams{Message: "name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}).ToolResult(), nil
		})
	s.AddTool(mcp.NewTool("caps", mcp.WithDescription("Returns the client capabilities of the request.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var caps any
			if info := server.RequestProtocolInfoFromContext(ctx); info != nil {
				caps = info.ClientCapabilities
			}
			raw, _ := json.Marshal(caps)
			return mcp.NewToolResultText(string(raw)), nil
		})
	s.AddTool(mcp.NewTool("die", mcp.WithDescription("Exits mid-call without answering.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "panic: die tool called")
			os.Exit(3)
			return nil, nil
		})
	return s
}

func init() {
	switch os.Getenv("KILN_TEST_SERVER") {
	case "":
		return
	case "crash":
		fmt.Fprintln(os.Stderr, "starting up")
		fmt.Fprintln(os.Stderr, "fatal: SERVICE_API_KEY is not set")
		os.Exit(3)
	case "stubborn":
		// Ignores SIGTERM and the end of stdin: only SIGKILL stops it.
		signal.Ignore(syscall.SIGTERM)
		go func() { _ = server.ServeStdio(testServer()) }()
		select {}
	case "hang":
		// A tool that runs until the client cancels it, and says so.
		s := testServer()
		s.AddTool(mcp.NewTool("hang", mcp.WithDescription("Runs until canceled.")),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				srv := server.ServerFromContext(ctx)
				_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
				<-ctx.Done()
				_ = srv.SendNotificationToClient(context.WithoutCancel(ctx), "notifications/message", map[string]any{"level": "info", "data": "hang canceled"})
				return nil, ctx.Err()
			})
		if err := server.ServeStdio(s); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "levels":
		// Offers logging, and tells the log level each call asked for.
		s := testServer()
		server.WithLogging()(s)
		s.AddTool(mcp.NewTool("loglevel", mcp.WithDescription("Returns the log level the request asked for.")),
			func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				level := "none"
				if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.LogLevel != "" {
					level = string(info.LogLevel)
				}
				return mcp.NewToolResultText(level), nil
			})
		if err := server.ServeStdio(s); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "noisy":
		// Every message comes after lines a client must survive: not
		// JSON, cut short, a response to a call never made, a notification
		// that quotes a call id.
		s := testServer()
		s.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns n bytes of text."), mcp.WithNumber("n")),
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strings.Repeat("x", req.GetInt("n", 0))), nil
			})
		if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, &noisyWriter{w: os.Stdout}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case "scripted":
		scriptedServer(os.Stdin, os.Stdout)
		os.Exit(0)
	case "badschema":
		// A real server that publishes a tool whose arguments are a string.
		s := testServer()
		s.AddTool(mcp.NewToolWithRawSchema("shout", "Takes a bare string.", json.RawMessage(`{"type":"string"}`)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("?"), nil
			})
		if err := server.ServeStdio(s); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	default:
		if err := server.ServeStdio(testServer()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// noisyLines precede every message the "noisy" server writes.
const noisyLines = "not json at all\n" +
	`{"jsonrpc":"2.0","id":"kiln-` + "\n" +
	`{"jsonrpc":"2.0","id":"kiln-call-0","result":{"content":[{"type":"text","text":"stray"}]}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/noise","params":{"id":"kiln-call-1","result":{}}}` + "\n"

// noisyWriter writes noisyLines before each message; mcp-go's server
// writes a message with one Write.
type noisyWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (n *noisyWriter) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := io.WriteString(n.w, noisyLines); err != nil {
		return 0, err
	}
	return n.w.Write(p)
}

// scriptedServer is a stdio MCP server written line by line, for what
// mcp-go's server does not promise: its notifications travel through a
// queue of their own, so they may pass the response of the call that sent
// them. Its one tool, chatty, writes a progress and a log notification
// when the call carries a progress token, and then its result, in that
// order.
func scriptedServer(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Meta            struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		reply := func(result string) { fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result) }
		switch req.Method {
		case "initialize":
			reply(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`, req.Params.ProtocolVersion))
		case "tools/list":
			reply(`{"tools":[{"name":"chatty","inputSchema":{"type":"object"}}]}`)
		case "ping":
			reply(`{}`)
		case "tools/call":
			if req.Params.Meta.ProgressToken != nil {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1}}`+"\n", req.Params.Meta.ProgressToken)
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"chatty done"}}`+"\n")
			}
			reply(`{"content":[{"type":"text","text":"ok"}]}`)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no %s here"}}`+"\n", req.ID, req.Method)
		}
	}
}
