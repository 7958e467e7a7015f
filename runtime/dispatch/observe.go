package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	backendpkg "github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// Observer receives what a backend reports while it runs a call made with
// a context from WithObserver: progress notifications and log messages.
// The server uses it to pass them on to the client that made the call,
// under the client's own progress token.
type Observer struct {
	// Progress gets each notifications/progress of the call.
	Progress func(progress float64, total *float64, message string)
	// Log gets the backend's notifications/message while the call runs.
	Log func(params json.RawMessage)
	// LogLevel is the least severe level Log wants, where the protocol
	// asks per request (2026-07-28 backends); "" means info.
	LogLevel string
	// Quiet asks such backends for no log messages: the caller gets none
	// (a 2026-07-28 request that names no level). Log still takes any a
	// backend sends unasked.
	Quiet bool
	// Client, when set, answers the backend's requests to the client
	// (sampling, elicitation, roots) made while it serves the call.
	Client ClientSession
	// aside marks the observer of a request that is not a tool call
	// (resources/read, prompts/get, ...): it is asked and told only when
	// no tool call listens on the backend, so one client's read never
	// takes another's call's question or logs (see listening).
	aside bool
}

// listening is who a backend's unaddressed question or log message may
// be for among calls: the tool calls in flight, or, when there are none,
// the other requests.
func listening(calls map[string]*Observer) []*Observer {
	var tools, aside []*Observer
	for _, obs := range calls {
		if obs.aside {
			aside = append(aside, obs)
		} else {
			tools = append(tools, obs)
		}
	}
	if len(tools) > 0 {
		return tools
	}
	return aside
}

type observerKey struct{}

// WithObserver returns a context whose backend calls report to o.
func WithObserver(ctx context.Context, o *Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observers routes backend notifications to the calls they belong to.
// Backends get kiln's own progress tokens, unique across backends, so a
// backend can neither see nor forge a client's token.
type observers struct {
	mu        sync.Mutex
	next      int64
	byBackend map[string]map[string]*Observer // backend -> token -> observer
	// questions are backends' requests routed to the session of the calls
	// in flight (clientRequestOn), by the key their calls are tracked
	// under; each is withdrawn when the last of its session's calls there
	// ends.
	questions map[string]map[*question]bool
}

// question is one routed backend request still waiting for its client.
type question struct {
	session string
	cancel  context.CancelCauseFunc
}

// errCallsEnded withdraws a question whose calls all ended: the backend
// that asked gave up on them, and its stdio or SSE transport gives kiln
// no other sign that it stopped waiting.
var errCallsEnded = errors.New("every call of the client session it was routed to has ended on this backend")

// askLocked registers q under key until the returned func runs. Called
// with o.mu held.
func (o *observers) askLocked(key string, q *question) func() {
	if o.questions == nil {
		o.questions = map[string]map[*question]bool{}
	}
	if o.questions[key] == nil {
		o.questions[key] = map[*question]bool{}
	}
	o.questions[key][q] = true
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.questions[key], q)
		if len(o.questions[key]) == 0 {
			delete(o.questions, key)
		}
	}
}

// withdrawLocked ends the questions under key whose session has no call
// left there. Called with o.mu held.
func (o *observers) withdrawLocked(key string) {
	if len(o.questions[key]) == 0 {
		return
	}
	left := map[string]bool{}
	for _, obs := range o.byBackend[key] {
		if obs.Client != nil {
			left[obs.Client.SessionID()] = true
		}
	}
	for q := range o.questions[key] {
		if !left[q.session] {
			q.cancel(errCallsEnded)
			delete(o.questions[key], q)
		}
	}
}

// track registers ctx's observer for one call on backend and returns what
// the backend should send: a progress token only when the caller wants
// progress, logs when it wants them.
func (o *observers) track(ctx context.Context, backend string) (opts backendpkg.CallOptions, done func()) {
	obs, _ := ctx.Value(observerKey{}).(*Observer)
	if obs == nil {
		return opts, func() {}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.trackLocked(obs, backend)
}

// trackAlone is track for a call from client session sid, unless a call
// from another client session is in flight on backend: then it registers
// nothing and reports false.
func (o *observers) trackAlone(ctx context.Context, backend, sid string) (opts backendpkg.CallOptions, done func(), ok bool) {
	obs, _ := ctx.Value(observerKey{}).(*Observer)
	if obs == nil {
		return opts, func() {}, true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, other := range o.byBackend[backend] {
		if !other.aside && other.Client != nil && other.Client.SessionID() != sid {
			return opts, nil, false
		}
	}
	opts, done = o.trackLocked(obs, backend)
	return opts, done, true
}

func (o *observers) trackLocked(obs *Observer, backend string) (opts backendpkg.CallOptions, done func()) {
	o.next++
	tok := "kiln-" + strconv.FormatInt(o.next, 10)
	if o.byBackend == nil {
		o.byBackend = map[string]map[string]*Observer{}
	}
	if o.byBackend[backend] == nil {
		o.byBackend[backend] = map[string]*Observer{}
	}
	o.byBackend[backend][tok] = obs
	if opts.Logs = obs.Log != nil && !obs.Quiet; opts.Logs {
		opts.LogLevel = obs.LogLevel
	}
	if obs.Progress != nil {
		opts.ProgressToken = tok
	}
	return opts, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.byBackend[backend], tok)
		o.withdrawLocked(backend)
		if len(o.byBackend[backend]) == 0 {
			// Keys name client sessions too (sessionKey): kept, they
			// would grow with every session a long-running kiln served.
			delete(o.byBackend, backend)
		}
	}
}

// notification handles one notification from a backend's shared session.
func (d *Dispatcher) notification(backend, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress", "notifications/message":
		d.callNotification(backend, backend, method, params)
	case "notifications/resources/updated":
		if d.opts.OnResourceUpdated != nil {
			d.opts.OnResourceUpdated(backend, params)
		}
	case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
		kind := method[len("notifications/") : len(method)-len("/list_changed")]
		d.log.Info("backend list changed", "backend", backend, "kind", kind)
		if d.opts.OnListChanged != nil {
			safe.Go(d.log, "the refresh of backend "+backend+"'s "+kind, func() { d.opts.OnListChanged(backend, kind) })
		}
	}
}

// callNotification routes a notification about calls (progress, log
// messages) to the calls tracked under key: the backend's name for its
// shared session, sessionKey for a client session's own.
func (d *Dispatcher) callNotification(backend, key, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p struct {
			Token    any      `json:"progressToken"`
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
			Message  string   `json:"message"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		tok, _ := p.Token.(string)
		d.obs.mu.Lock()
		// Looked up under the sending backend: one backend cannot feed
		// progress into another's calls by guessing tokens.
		obs := d.obs.byBackend[key][tok]
		d.obs.mu.Unlock()
		if obs != nil && obs.Progress != nil {
			obs.Progress(p.Progress, p.Total, p.Message)
		}
	case "notifications/message":
		d.log.Info("backend log", "backend", backend, "params", string(params))
		params = tagLogger(backend, params)
		// A log message names no request, so it goes to a caller only
		// when exactly one call on this backend is listening: with several
		// (possibly other clients') it could belong to any of them.
		d.obs.mu.Lock()
		var target *Observer
		if calls := listening(d.obs.byBackend[key]); len(calls) == 1 {
			target = calls[0]
		}
		d.obs.mu.Unlock()
		if target != nil && target.Log != nil {
			target.Log(params)
		} else if d.opts.OnLog != nil {
			d.opts.OnLog(backend, params)
		}
	}
}
