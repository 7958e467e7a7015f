package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/route"
)

// subscriptions tracks which client sessions subscribed to which backend
// resource, so an update reaches only them and a backend is unsubscribed
// when its last subscriber leaves or disconnects.
type subscriptions struct {
	mu        sync.Mutex
	bySession map[string]map[string]bool // session -> URIs
	byURI     map[string]map[string]bool // URI -> sessions
	owner     map[string]string          // URI -> backend subscribed at
	// stuck holds the URIs whose move to a new owner failed (rehome),
	// so the retries of one outage log once.
	stuck map[string]bool
	// streams deliver to subscriptions/listen streams, by their key in
	// bySession.
	streams map[string]func(mcp.JSONRPCNotification)
	// perURI serializes subscribing and unsubscribing one URI, so a second
	// subscriber never counts on an upstream subscription still in flight
	// that may fail.
	perURI sync.Map // URI -> *sync.Mutex
}

// lock holds uri's subscription changes until the returned func runs.
func (t *subscriptions) lock(uri string) func() {
	mu, _ := t.perURI.LoadOrStore(uri, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

func (t *subscriptions) init() {
	t.bySession = map[string]map[string]bool{}
	t.byURI = map[string]map[string]bool{}
	t.owner = map[string]string{}
	t.stuck = map[string]bool{}
	t.streams = map[string]func(mcp.JSONRPCNotification){}
}

// add records that session subscribed to uri at backend and reports
// whether it is the URI's first subscriber (kiln must subscribe upstream).
func (t *subscriptions) add(session, uri, backend string) (first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySession[session] == nil {
		t.bySession[session] = map[string]bool{}
	}
	t.bySession[session][uri] = true
	if t.byURI[uri] == nil {
		t.byURI[uri] = map[string]bool{}
		t.owner[uri] = backend
		first = true
	}
	t.byURI[uri][session] = true
	return first
}

// remove drops session's subscription to uri and returns the backend to
// unsubscribe from when it was the last subscriber, else "".
func (t *subscriptions) remove(session, uri string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bySession[session], uri)
	if len(t.bySession[session]) == 0 {
		delete(t.bySession, session)
	}
	subs, ok := t.byURI[uri]
	if !ok {
		return ""
	}
	delete(subs, session)
	if len(subs) > 0 {
		return ""
	}
	b := t.owner[uri]
	delete(t.byURI, uri)
	delete(t.owner, uri)
	delete(t.stuck, uri)
	return b
}

// uris returns the URIs session subscribed to.
func (t *subscriptions) uris(session string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for u := range t.bySession[session] {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// sessions returns the sessions subscribed to uri at backend.
func (t *subscriptions) sessions(backend, uri string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owner[uri] != backend {
		return nil
	}
	var out []string
	for s := range t.byURI[uri] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// at returns the URIs kiln subscribed to at backend.
func (t *subscriptions) at(backend string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for u, b := range t.owner {
		if b == backend {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// move is a subscribed URI whose owner changed.
type move struct{ uri, from, to string }

// moved returns the subscribed URIs that table gives another backend than
// the one kiln subscribed at, and the stuck ones that no longer need a
// move (the backend kiln subscribed at serves them again).
func (t *subscriptions) moved(table *route.Table) (out []move, settled []move) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uri, from := range t.owner {
		to, ok := table.Owner(uri)
		switch {
		case ok && to != from:
			out = append(out, move{uri, from, to})
		case ok && t.stuck[uri]:
			delete(t.stuck, uri)
			settled = append(settled, move{uri: uri, from: from})
		}
	}
	return out, settled
}

// rehome moves kiln's subscription to uri from the backend that served it
// to the one that serves it now (the first was removed, or stopped
// listing it), so the sessions subscribed keep getting updates. The old
// backend is unsubscribed if it is still there.
func (p *passthru) rehome(uri, from, to string) {
	defer p.subs.lock(uri)()
	p.subs.mu.Lock()
	still := p.subs.owner[uri] == from && len(p.subs.byURI[uri]) > 0
	p.subs.mu.Unlock()
	if !still || p.s.opts.Passthrough == nil {
		return
	}
	// Each request keeps its backend's call timeout (dispatch).
	ctx := context.Background()
	if err := p.s.opts.Passthrough.Subscribe(ctx, to, uri); err != nil {
		// Every list sync retries the move: one warning per outage.
		p.subs.mu.Lock()
		again := p.subs.stuck[uri]
		p.subs.stuck[uri] = true
		p.subs.mu.Unlock()
		log := p.s.log.Warn
		if again {
			log = p.s.log.Debug
		}
		log("could not move a resource subscription to the backend that serves the URI now; its subscribers get no updates until it answers (kiln retries when backend lists change)",
			"uri", uri, "from", from, "to", to, "err", err)
		return
	}
	p.subs.mu.Lock()
	p.subs.owner[uri] = to
	was := p.subs.stuck[uri]
	delete(p.subs.stuck, uri)
	p.subs.mu.Unlock()
	if was {
		p.s.log.Info("moved a resource subscription to the backend that serves the URI now; its subscribers get updates again", "uri", uri, "from", from, "to", to)
	}
	if err := p.s.opts.Passthrough.Unsubscribe(ctx, from, uri); err != nil {
		p.s.log.Debug("could not unsubscribe the backend that no longer serves a URI", "backend", from, "uri", uri, "err", err)
	}
}

// SessionID is the MCP session a request belongs to (Mcp-Session-Id on
// streamable HTTP), or "" for a client that has none; the audit log
// records it.
func SessionID(ctx context.Context) string { return sessionID(ctx) }

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

// hook installs the SDK hooks passthrough needs: subscriptions are
// forwarded before the SDK acknowledges them (so a backend's refusal
// reaches the client), sessions are tracked for updates and logs, and a
// client's log level goes to every backend.
// maySubscribe reports whether raw may be a subscription request; it
// spares every tools/call a decode of its arguments (the envelope scan
// finds the method). Anything the scan is unsure of may be one.
func maySubscribe(raw []byte) bool {
	var top topMembers
	if !scanRequest(raw, &top) || top.odd || bytes.IndexByte(top.method, '\\') >= 0 {
		return true
	}
	switch string(top.method) {
	case `"` + string(mcp.MethodSubscriptionsListen) + `"`, `"` + string(mcp.MethodResourcesSubscribe) + `"`, `"` + string(mcp.MethodResourcesUnsubscribe) + `"`:
		return true
	}
	return false
}

func (p *passthru) hook(h *server.Hooks) {
	h.AddOnRequestInitialization(func(ctx context.Context, _ any, message any) error {
		raw, ok := message.(json.RawMessage)
		if !ok || !maySubscribe(raw) {
			return nil
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				URI           string                 `json:"uri"`
				Notifications mcp.SubscriptionFilter `json:"notifications"`
				Meta          *mcp.Meta              `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &req) != nil {
			// Params of the wrong shape: the SDK refuses the request, and
			// the read loop's announcement of it must go (stdio.go).
			var head struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(raw, &head) == nil && head.ID != nil {
				p.pending.unannounce(sessionID(ctx), head.ID)
			}
			return nil
		}
		// The hook runs before the SDK reads the request's era, and the
		// SDK refuses each of these methods in the other era (2026-07-28
		// removed resources/(un)subscribe): a subscription forwarded for a
		// refused request is one nothing would ever end.
		modern := mcp.IsModernProtocol(req.Params.Meta.ProtocolVersion())
		if modern && (req.Method == string(mcp.MethodResourcesSubscribe) || req.Method == string(mcp.MethodResourcesUnsubscribe)) {
			p.pending.unannounce(sessionID(ctx), req.ID)
		}
		switch req.Method {
		case string(mcp.MethodSubscriptionsListen):
			if modern {
				return p.listen(ctx, req.ID, req.Params.Notifications.ResourceSubscriptions)
			}
		case string(mcp.MethodResourcesSubscribe):
			if !modern {
				sid := sessionID(ctx)
				ctx, done := p.pending.track(ctx, sid, req.ID)
				defer done()
				return p.subscribe(ctx, sid, req.Params.URI)
			}
		case string(mcp.MethodResourcesUnsubscribe):
			if !modern {
				sid := sessionID(ctx)
				ctx, done := p.pending.track(ctx, sid, req.ID)
				defer done()
				p.unsubscribe(ctx, sid, req.Params.URI)
			}
		}
		return nil
	})
	// Logs sent outside any call go to sessions that initialized before
	// 2026-07-28: later clients declare a level per request, and a server
	// must not log to them unasked (SEP-2575). An initialize is counted
	// while it runs, so a session that ends meanwhile is not added after
	// (logState.ended); mcp-go v1.2.1's initialize handler never fails,
	// so the after hook always uncounts it (an OnError hook could too, but
	// any such hook turns fastCall off).
	h.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			p.logs.startInit(cs.SessionID())
		}
	})
	h.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil {
			return
		}
		p.logs.endInit(cs.SessionID(), res != nil && !mcp.IsModernProtocol(res.ProtocolVersion))
	})
	h.AddOnUnregisterSession(func(ctx context.Context, cs server.ClientSession) {
		// First, so a subscription in flight ends now and its URI is free
		// for the unsubscribes below.
		p.pending.sessionEnded(cs.SessionID())
		p.logs.end(cs.SessionID())
		// The level backends get follows the sessions left: a departed
		// session's debug kept every backend at debug for good.
		if p.logs.drop(cs.SessionID()) != "" && p.s.opts.Passthrough != nil {
			for _, name := range p.backendNames() {
				p.logs.apply(context.WithoutCancel(ctx), p.s, name)
			}
		}
		for _, uri := range p.subs.uris(cs.SessionID()) {
			p.unsubscribe(context.WithoutCancel(ctx), cs.SessionID(), uri)
		}
	})
	h.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if p.logs.set(sessionID(ctx), req.Params.Level) == "" || p.s.opts.Passthrough == nil {
			return
		}
		for _, name := range p.backendNames() {
			p.logs.apply(context.WithoutCancel(ctx), p.s, name)
		}
	})
}

func (p *passthru) backendNames() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.offers))
}

// subscribe forwards a client's subscription to the owning backend when it
// is the URI's first subscriber. kiln's own resources accept subscriptions
// and never change under them.
func (p *passthru) subscribe(ctx context.Context, session, uri string) error {
	if strings.HasPrefix(uri, route.Reserved) || uri == "" {
		return nil
	}
	owner, ok := p.owner(uri)
	if !ok {
		return fmt.Errorf("cannot subscribe to %q: no backend serves that URI; resources/list and resources/templates/list show what kiln serves", uri)
	}
	if p.s.opts.Passthrough == nil {
		return fmt.Errorf("cannot subscribe to %q: this kiln forwards no subscriptions", uri)
	}
	defer p.subs.lock(uri)()
	if !p.subs.add(session, uri, owner) {
		return nil
	}
	if err := p.s.opts.Passthrough.Subscribe(ctx, owner, uri); err != nil {
		p.subs.remove(session, uri)
		if ctx.Err() != nil {
			p.undoSubscription(ctx, owner, uri)
		}
		return fmt.Errorf("cannot subscribe to %q: %v", uri, p.backendErr(err))
	}
	return nil
}

// listen forwards the resource subscriptions of a subscriptions/listen
// stream (protocol 2026-07-28, where they replace resources/subscribe).
// The stream's session is one the SDK made for this request and never
// registered, so updates go straight onto its channel, tagged with the
// stream's subscription ID; the subscriptions end with the request.
func (p *passthru) listen(ctx context.Context, id json.RawMessage, uris []string) error {
	cs := server.ClientSessionFromContext(ctx)
	if len(uris) == 0 || cs == nil {
		return nil
	}
	var subID any
	_ = json.Unmarshal(id, &subID)
	// One session may hold several streams (stdio and kiln connect serve
	// every request on one; a client reopens its stream with a new filter
	// before the old one ends), so the request ID is part of the key.
	key := fmt.Sprintf("listen:%p:%s", cs, id)
	var done []string
	for _, uri := range uris {
		if err := p.subscribe(ctx, key, uri); err != nil {
			for _, u := range done {
				p.unsubscribe(context.WithoutCancel(ctx), key, u)
			}
			return err
		}
		done = append(done, uri)
	}
	p.subs.mu.Lock()
	p.subs.streams[key] = func(n mcp.JSONRPCNotification) {
		n.Params.Meta = map[string]any{mcp.MetaKeySubscriptionID: subID}
		select {
		case cs.NotificationChannel() <- n:
		default:
			p.s.log.Debug("a subscription stream is full; dropped a resource update", "uri", n.Params.AdditionalFields["uri"])
		}
	}
	p.subs.mu.Unlock()
	context.AfterFunc(ctx, func() {
		p.subs.mu.Lock()
		delete(p.subs.streams, key)
		p.subs.mu.Unlock()
		for _, u := range done {
			p.unsubscribe(context.WithoutCancel(ctx), key, u)
		}
	})
	return nil
}

// unsubscribe drops a session's subscription and the backend's when no
// session is left on the URI.
func (p *passthru) unsubscribe(ctx context.Context, session, uri string) {
	defer p.subs.lock(uri)()
	owner := p.subs.remove(session, uri)
	if owner == "" || p.s.opts.Passthrough == nil {
		return
	}
	if err := p.s.opts.Passthrough.Unsubscribe(ctx, owner, uri); err != nil {
		if ctx.Err() != nil {
			p.undoSubscription(ctx, owner, uri)
			return
		}
		p.s.log.Debug("could not unsubscribe a backend resource", "backend", owner, "uri", uri, "err", err)
	}
}

// resubscribe renews kiln's subscriptions at a backend that reconnected.
func (p *passthru) resubscribe(ctx context.Context, name string) {
	for _, uri := range p.subs.at(name) {
		if err := p.s.opts.Passthrough.Subscribe(ctx, name, uri); err != nil {
			p.s.log.Warn("could not renew a resource subscription after the backend reconnected", "backend", name, "uri", uri, "err", err)
		}
	}
}

// ResourceUpdated passes a backend's notifications/resources/updated to
// the sessions that subscribed to that URI, and to no other.
func (s *Server) ResourceUpdated(backend string, params json.RawMessage) {
	p := s.pass
	if p == nil {
		return
	}
	var n map[string]any
	if json.Unmarshal(s.opts.Scrubber.JSON(params), &n) != nil {
		return
	}
	uri, _ := n["uri"].(string)
	for _, sid := range p.subs.sessions(backend, uri) {
		p.subs.mu.Lock()
		stream := p.subs.streams[sid]
		p.subs.mu.Unlock()
		if stream != nil {
			stream(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationResourceUpdated), Params: mcp.NotificationParams{AdditionalFields: n}}})
			continue
		}
		if err := s.mcp.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationResourceUpdated), n); err != nil {
			s.log.Debug("could not forward a resource update", "session", sid, "uri", uri, "err", err)
		}
	}
}

// BackendLog passes a log message a backend sent outside any single call
// to every client session whose log level admits it; the dispatcher has
// already tagged its logger with the backend.
func (s *Server) BackendLog(backend string, params json.RawMessage) {
	p := s.pass
	if p == nil {
		return
	}
	var n mcp.LoggingMessageNotificationParams
	if json.Unmarshal(s.opts.Scrubber.JSON(params), &n) != nil || n.Level == "" {
		return
	}
	p.logs.mu.Lock()
	sessions := make([]string, 0, len(p.logs.sessions))
	for sid := range p.logs.sessions {
		sessions = append(sessions, sid)
	}
	p.logs.mu.Unlock()
	fields := map[string]any{"level": n.Level, "data": n.Data}
	if n.Logger != "" {
		fields["logger"] = n.Logger
	}
	for _, sid := range sessions {
		// kiln's filter, not the SDK's: the SDK holds a session that never
		// set a level to errors only, and a backend spoken to directly
		// sends such a client every level.
		if !p.logs.admits(sid, n.Level) {
			continue
		}
		if err := s.mcp.SendNotificationToSpecificClient(sid, string(mcp.MethodNotificationMessage), fields); err != nil {
			s.log.Debug("could not forward a backend log message", "backend", backend, "session", sid, "err", err)
		}
	}
}
