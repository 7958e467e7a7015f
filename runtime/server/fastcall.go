package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/kilnmcp/kiln/runtime/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fastCall serves a stdio tools/call without mcp-go's HandleMessage, which
// decodes every request four times (a probe, the protocol _meta twice and
// the request itself): on 2026-07-28 the go-sdk client sends a large _meta
// with each call, and those decodes were ~21% of kiln's CPU per tier-1 call
// (BenchmarkEchoHop profile). fastCall decodes the line once and does what
// HandleMessage does for a tools/call that kiln uses: the request's protocol
// info in the context and on the session, tool lookup, cancellation by
// notifications/cancelled (ctx, registered by the read loop in calls
// before it reads on), and the 2026-07-28 result decoration (resultType,
// serverInfo).
//
// It reports ok=false, having done nothing, for every request it would not
// serve exactly as HandleMessage does: a malformed or legacy-odd envelope, a
// 2026-07-28 request with an unknown version or without client
// capabilities, a tool that is unknown, per-session or task-augmented, and
// any server with per-request hooks. The caller then uses HandleMessage,
// which answers those with its own errors. kiln registers no tool filters,
// tool middleware or SDK-side schema validation (it validates arguments
// itself), which HandleMessage would also apply.
func (s *Server) fastCall(ctx context.Context, id json.RawMessage, line []byte) (resp []byte, ok bool) {
	if s.requestHooks() {
		return nil, false
	}
	// One pass over the line, decoding only the tool name: arguments stay
	// raw (kiln's tool handlers read RawArguments only; mcp-go also decodes
	// them into Arguments, a second pass over a program's whole text), and
	// _meta is decoded once, below.
	var m callLine
	if !scanCallLine(line, &m) && !decodeCallLine(line, &m) {
		return nil, false
	}
	if m.jsonrpc != mcp.JSONRPC_VERSION || m.result || !m.params || m.task {
		return nil, false
	}
	var req mcp.CallToolRequest
	req.Method = string(mcp.MethodToolsCall)
	req.Params.Name = m.name
	req.Params.MultiRoundTripParams = m.round
	if len(m.arguments) > 0 {
		req.Params.RawArguments = m.arguments
	}
	meta, info, ok := s.requestMeta(m.meta)
	if !ok {
		return nil, false
	}
	req.Params.Meta = meta
	session := server.ClientSessionFromContext(ctx)
	if st, isST := session.(server.SessionWithTools); isST {
		if _, own := st.GetSessionTools()[req.Params.Name]; own {
			return nil, false
		}
	}
	tool := s.mcp.GetTool(req.Params.Name)
	if tool == nil || tool.Handler == nil ||
		(tool.Tool.Execution != nil && tool.Tool.Execution.TaskSupport == mcp.TaskSupportRequired) {
		return nil, false
	}
	// The registered name, not the view into line scanCallLine gave: a
	// name kept (a metric's label) must not keep the line alive.
	req.Params.Name = tool.Tool.Name
	if info.Modern {
		applyProtocolInfo(session, info)
	}
	if !jsontext.Valid(id) {
		return nil, false
	}
	ctx = server.WithRequestProtocolInfo(ctx, info)
	raw := &rawAnswer{}
	ctx = context.WithValue(ctx, rawAnswerKey{}, raw)
	req.Header = make(http.Header)
	if ea := earlyAnswerFrom(ctx); ea != nil {
		ea.send = func(res *mcp.CallToolResult) {
			ea.write(s.encodeResponse(id, req.Params.Name, info, res, nil))
		}
	}
	result, err := tool.Handler(ctx, req)
	if result == answeredEarly && err == nil {
		return nil, true
	}
	if err == nil && result != nil && result == raw.sdk {
		if b, ok := appendCallResponse(nil, id, raw.result, info.Modern, s.serverInfoJSON()); ok {
			return b, true
		}
		// Written as mcp-go writes it, through the SDK's type.
		if result, err = toMCP(raw.result); err == nil {
			result.IsError = raw.result.IsError
		}
	}
	return s.encodeResponse(id, req.Params.Name, info, result, err), true
}

// encodeResponse writes a tools/call response as mcp-go's HandleMessage
// would.
func (s *Server) encodeResponse(id json.RawMessage, name string, info *server.RequestProtocolInfo, result *mcp.CallToolResult, err error) []byte {
	var idValue any
	_ = json.Unmarshal(id, &idValue) // fastCall checked it
	var msg mcp.JSONRPCMessage
	switch {
	case err != nil:
		msg = handlerError(mcp.NewRequestId(idValue), info, err)
	case result == nil:
		msg = mcp.NewJSONRPCError(mcp.NewRequestId(idValue), mcp.INTERNAL_ERROR, "tool "+name+" returned no result", nil)
	default:
		if info.Modern {
			s.decorate(result)
		}
		msg = mcp.NewJSONRPCResultResponse(mcp.NewRequestId(idValue), result)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		s.log.Error("encode tools/call response", "err", err)
		return (&envelopeError{code: codeInternalError, id: id, msg: "internal error: encode the result: " + err.Error()}).response()
	}
	return b
}

// serverInfoJSON is the serverInfo fastCall stamps on 2026-07-28 results,
// encoded once.
func (s *Server) serverInfoJSON() []byte {
	s.serverInfoOnce.Do(func() {
		s.serverInfo, _ = json.Marshal(mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version})
	})
	return s.serverInfo
}

// requestHooks reports whether a hook would act on a tools/call in
// HandleMessage. kiln's own hooks are per session, except the passthrough's
// request-initialization hook, which acts only on subscription requests
// (maySubscribe is false for every line route hands to a call).
func (s *Server) requestHooks() bool {
	h := s.hooks
	return len(h.OnBeforeAny) > 0 || len(h.OnSuccess) > 0 || len(h.OnError) > 0 ||
		len(h.OnRequestInitialization) > s.subsHooks || len(h.OnBeforeCallTool) > 0 || len(h.OnAfterCallTool) > 0
}

// requestMeta decodes a request's _meta and reads its protocol era as
// mcp-go does; ok is false for a _meta mcp-go would refuse (not an object,
// or a 2026-07-28 one with an unknown version or no client capabilities).
//
// A client sends the same _meta on every call (the go-sdk's is large), so
// the last answer is kept by raw bytes: decoding it into a map and deriving
// the client's info and capabilities (which re-encodes and decodes them)
// were 8% of a tier-1 call's CPU. The kept values are shared read-only
// between requests: kiln's handlers only read a request's _meta
// (observe.go, telemetry.go) and mcp-go never changes protocol info.
func (s *Server) requestMeta(raw json.RawMessage) (*mcp.Meta, *server.RequestProtocolInfo, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, &server.RequestProtocolInfo{}, true
	}
	if last := s.lastMeta.Load(); last != nil && last.raw == string(raw) {
		return last.meta, last.info, true
	}
	meta := &mcp.Meta{}
	if json.Unmarshal(raw, meta) != nil {
		return nil, nil, false
	}
	version := meta.ProtocolVersion()
	info := &server.RequestProtocolInfo{ProtocolVersion: version}
	if mcp.IsModernProtocol(version) {
		caps := meta.ClientCapabilities()
		if caps == nil || !mcp.IsValidProtocolVersion(version) {
			return nil, nil, false
		}
		info = &server.RequestProtocolInfo{Modern: true, ProtocolVersion: version,
			ClientInfo: meta.ClientInfo(), LogLevel: meta.LogLevel(), ClientCapabilities: caps}
	}
	s.lastMeta.Store(&metaInfo{raw: string(raw), meta: meta, info: info})
	return meta, info, true
}

// metaInfo is one raw _meta, decoded, and the protocol info it declares.
type metaInfo struct {
	raw  string
	meta *mcp.Meta
	info *server.RequestProtocolInfo
}

// applyProtocolInfo gives the session what a 2026-07-28 request declares,
// as the initialize handshake used to (mcp-go does the same per request).
func applyProtocolInfo(session server.ClientSession, info *server.RequestProtocolInfo) {
	if session == nil {
		return
	}
	if withInfo, ok := session.(server.SessionWithClientInfo); ok {
		if info.ClientInfo != nil {
			withInfo.SetClientInfo(*info.ClientInfo)
		}
		if info.ClientCapabilities != nil {
			withInfo.SetClientCapabilities(*info.ClientCapabilities)
		}
	}
	if !session.Initialized() {
		session.Initialize()
	}
}

// decorate stamps a 2026-07-28 result as mcp-go does: resultType complete
// unless the handler set one (input_required), and the server's identity.
func (s *Server) decorate(r *mcp.CallToolResult) {
	if r.GetResultType() == "" {
		r.SetResultType(mcp.ResultTypeComplete)
	}
	if meta := r.EnsureResultMeta(); meta != nil && meta.ServerInfo() == nil {
		meta.SetServerInfo(mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version})
	}
}

// handlerError answers a handler's error as mcp-go does.
func handlerError(id mcp.RequestId, info *server.RequestProtocolInfo, err error) mcp.JSONRPCError {
	var required mcp.URLElicitationRequiredError
	var pointer *mcp.URLElicitationRequiredError
	switch {
	case info.Modern:
	case errors.As(err, &required):
		d := required.JSONRPCError().Error
		return mcp.NewJSONRPCError(id, d.Code, err.Error(), d.Data)
	case errors.As(err, &pointer) && pointer != nil:
		d := pointer.JSONRPCError().Error
		return mcp.NewJSONRPCError(id, d.Code, err.Error(), d.Data)
	}
	return mcp.NewJSONRPCError(id, mcp.INTERNAL_ERROR, err.Error(), nil)
}

// inflight holds the cancel functions of the tools/call requests the read
// loop serves, by raw JSON id, so a notifications/cancelled naming one
// cancels it: the SDK's own table holds only what HandleMessage serves,
// and only once it starts serving it.
type inflight struct {
	mu  sync.Mutex
	all map[string]*context.CancelFunc
}

// add registers cancel under id and returns the handle remove takes: a
// client that reuses an id while its first call runs keeps the later
// call cancelable after the first one ends.
func (f *inflight) add(id string, cancel context.CancelFunc) *context.CancelFunc {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.all == nil {
		f.all = map[string]*context.CancelFunc{}
	}
	h := &cancel
	f.all[id] = h
	return h
}

func (f *inflight) remove(id string, h *context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.all[id] == h {
		delete(f.all, id)
	}
}

// cancel cancels the call a notifications/cancelled line names, if kiln
// serves it.
func (f *inflight) cancel(line []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || n.Params.RequestID == nil {
		return
	}
	f.mu.Lock()
	h := f.all[string(n.Params.RequestID)]
	f.mu.Unlock()
	if h != nil {
		(*h)()
	}
}
