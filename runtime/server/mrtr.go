package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// On protocol 2026-07-28 a server cannot send a client requests; it
// answers a call with an input-required result (inputRequests plus an
// opaque requestState) and the client calls again with inputResponses. A
// kiln call can ask at any point of a run (a backend eliciting in the
// middle of a TypeScript program), so kiln keeps the run going in an
// exchange and answers each round with what the run is waiting for; the
// requestState names the exchange. Backends that ask kiln the same way are
// answered by the backend client's own loop, which lands here too.

// exchangeIdle bounds how long a run waits for the client to come back
// with answers before it is canceled.
const exchangeIdle = 10 * time.Minute

type exchange struct {
	token  string
	cancel context.CancelFunc
	ended  <-chan struct{}       // the run's context is done
	done   chan *toolcall.Result // the run's result, once
	wake   chan struct{}         // a new question is pending

	mu      sync.Mutex
	next    int
	pending map[string]*question
	idle    *time.Timer
	// An inline run (runInline) answers its request with its first
	// question: first is called once for it, unless the run has finished.
	first    func()
	asked    bool
	finished bool
}

type question struct {
	method string
	params json.RawMessage
	sent   bool
	answer chan json.RawMessage
}

// exchangePrefix starts every requestState kiln issues, so a retry
// carrying one that expired or belongs to another replica is answered
// "no run waiting" instead of being taken for a backend's own state (and
// the tool run again).
const exchangePrefix = "kiln-x-"

// exchanges holds the runs waiting for a client's answers, by token.
type exchanges struct {
	mu   sync.Mutex
	all  map[string]*exchange
	runs runners
}

// maxIdleRunners bounds the goroutines kept waiting for the next run.
const maxIdleRunners = 16

// runners runs resumable calls on goroutines that outlive one run: a
// goroutine per call grew a fresh stack through the JSON decoders on every
// call (runtime.copystack under resumable was 6.5% of a tier-1 call's CPU,
// BenchmarkEchoHop profile). Up to maxIdleRunners wait for work; the rest
// end when their run does.
type runners struct {
	work chan func()
	// idle counts runners that have committed to take the next run; a
	// sender claims one by decrementing it, so its send never waits for
	// more than that runner's way to the receive.
	idle atomic.Int32
	once sync.Once
}

// run starts f on an idle runner, or on a new one when none is idle.
func (r *runners) run(f func()) {
	r.once.Do(func() { r.work = make(chan func()) })
	for {
		n := r.idle.Load()
		if n <= 0 {
			go r.loop(f)
			return
		}
		if r.idle.CompareAndSwap(n, n-1) {
			r.work <- f
			return
		}
	}
}

func (r *runners) loop(f func()) {
	for {
		f()
		for {
			n := r.idle.Load()
			if n >= maxIdleRunners {
				return
			}
			if r.idle.CompareAndSwap(n, n+1) {
				break
			}
		}
		f = <-r.work
	}
}

func (x *exchanges) add(ex *exchange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.all == nil {
		x.all = map[string]*exchange{}
	}
	x.all[ex.token] = ex
}

func (x *exchanges) get(token string) *exchange {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.all[token]
}

func (x *exchanges) remove(token string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.all, token)
}

// ask queues a question for the client and waits for its answer.
func (ex *exchange) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	q := &question{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	ex.mu.Lock()
	ex.next++
	id := "kiln-" + strconv.Itoa(ex.next)
	if ex.pending == nil {
		ex.pending = map[string]*question{}
	}
	ex.pending[id] = q
	first := ex.first != nil && !ex.asked && !ex.finished && ex.running()
	if first {
		ex.asked = true
	}
	ex.mu.Unlock()
	if first {
		ex.first()
	} else {
		select {
		case ex.wake <- struct{}{}:
		default:
		}
	}
	defer func() {
		ex.mu.Lock()
		delete(ex.pending, id)
		ex.mu.Unlock()
	}()
	select {
	case a := <-q.answer:
		return a, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not answer %s: %w", method, ctx.Err())
	case <-ex.ended:
		return nil, fmt.Errorf("the client did not answer %s: the call was canceled or the client did not come back within %s", method, exchangeIdle)
	}
}

// running reports whether the run goes on: a run the client canceled
// does not answer the canceled request with a question.
func (ex *exchange) running() bool {
	select {
	case <-ex.ended:
		return false
	default:
		return true
	}
}

// deliver hands the client's answers to the questions they answer; a
// question left unanswered is asked again in the next round.
func (ex *exchange) deliver(responses mcp.InputResponses) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.idle != nil {
		ex.idle.Stop()
	}
	for id, q := range ex.pending {
		r, ok := responses[id]
		if !ok {
			q.sent = false
			continue
		}
		raw, err := r.MarshalJSON()
		if err != nil {
			q.sent = false
			continue
		}
		select {
		case q.answer <- raw:
		default:
		}
	}
}

// unsent takes the questions the client has not seen yet.
func (ex *exchange) unsent() mcp.InputRequests {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	out := mcp.InputRequests{}
	for id, q := range ex.pending {
		if q.sent {
			continue
		}
		var r mcp.InputRequest
		envelope, _ := json.Marshal(map[string]any{"method": q.method, "params": q.params})
		if r.UnmarshalJSON(envelope) != nil {
			continue
		}
		q.sent = true
		out[id] = r
	}
	return out
}

// serveCall runs h, a tool handler, so that what backends send while it
// runs reaches the client that made req: progress, log messages and
// requests to the client. backends says h may call backends: then a
// 2026-07-28 request runs resumably (its questions go back as
// input-required results, ask non-nil). Every handler that dispatches
// backend calls goes through here.
func (s *Server) serveCall(ctx context.Context, req mcp.CallToolRequest, args json.RawMessage,
	h func(context.Context, json.RawMessage) *toolcall.Result, backends bool) (out *toolcall.Result, ask *mcp.CallToolResult) {
	if backends && modern(ctx) && canAnswer(clientCapabilities(ctx)) {
		return s.resumable(ctx, req, args, h)
	}
	return h(s.observe(ctx, req), args), nil
}

// canAnswer reports whether a client can answer any backend question; a
// run for one that cannot is not worth its own goroutine (the hand-off
// costs tens of microseconds per call on a loaded machine).
func canAnswer(caps mcp.ClientCapabilities) bool {
	return caps.Sampling != nil || caps.Elicitation != nil || caps.Roots != nil
}

// resumable runs h for a 2026-07-28 request so that it can ask the client
// through input-required results, or resumes the run the request's
// requestState names.
func (s *Server) resumable(ctx context.Context, req mcp.CallToolRequest, args json.RawMessage,
	h func(context.Context, json.RawMessage) *toolcall.Result) (*toolcall.Result, *mcp.CallToolResult) {
	if ea := earlyAnswerFrom(ctx); ea != nil && ea.send != nil && req.Params.RequestState == "" {
		return s.runInline(ctx, req, args, h, ea)
	}
	var ex *exchange
	if state := req.Params.RequestState; state != "" {
		if ex = s.exchanges.get(state); ex == nil {
			return toolcall.Errorf("%s: requestState %q names no run waiting for input in this kiln (it finished, expired after %s, or belongs to another kiln); call again without requestState",
				req.Params.Name, state, exchangeIdle), nil
		}
		ex.deliver(req.Params.InputResponses)
	} else {
		// The run outlives this request: it may go on across rounds.
		run, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ex = &exchange{token: exchangePrefix + randomToken(), cancel: cancel, done: make(chan *toolcall.Result, 1),
			wake: make(chan struct{}, 1), pending: map[string]*question{}, ended: run.Done()}
		s.exchanges.add(ex)
		run = s.observeWith(run, req, s.newCallClient(ctx, ex))
		s.exchanges.runs.run(func() {
			defer cancel()
			ex.done <- s.runRecovered(run, req.Params.Name, args, h)
		})
	}
	select {
	case out := <-ex.done:
		s.exchanges.remove(ex.token)
		return out, nil
	case <-ex.wake:
		ask := ex.unsent()
		if len(ask) == 0 {
			// Woken by a question answered meanwhile: wait again.
			return s.wait(ctx, req, ex)
		}
		return nil, s.inputRequired(ex, ask)
	case <-ctx.Done():
		s.exchanges.remove(ex.token)
		ex.cancel()
		return toolcall.Errorf("%s: canceled by the client", req.Params.Name), nil
	}
}

// runInline is resumable for a request that can be answered before its
// handler returns (earlyAnswer: the stdio read loop's): the run goes on
// the request's own goroutine, and only a question makes it an exchange,
// its first round answered at once through ea. Handing every run to a
// runner and its result back cost each call two goroutine hand-offs,
// though most runs ask nothing.
func (s *Server) runInline(ctx context.Context, req mcp.CallToolRequest, args json.RawMessage,
	h func(context.Context, json.RawMessage) *toolcall.Result, ea *earlyAnswer) (*toolcall.Result, *mcp.CallToolResult) {
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// The token and the question map wait for the first question: most
	// runs ask none, and a token costs a read of the system's randomness.
	ex := &exchange{cancel: cancel, done: make(chan *toolcall.Result, 1),
		wake: make(chan struct{}, 1), ended: run.Done()}
	// Until it asks, the run is the request's: the client's cancellation
	// ends it.
	detach := context.AfterFunc(ctx, cancel)
	ex.first = func() {
		detach()
		ex.token = exchangePrefix + randomToken()
		s.exchanges.add(ex)
		ea.send(s.inputRequired(ex, ex.unsent()))
	}
	out, asked := s.runAsked(run, req, args, h, ex)
	if asked {
		// The request was answered; the client's next round takes this.
		ex.done <- out
		return nil, answeredEarly
	}
	detach()
	if ctx.Err() != nil {
		return toolcall.Errorf("%s: canceled by the client", req.Params.Name), nil
	}
	return out, nil
}

// runAsked runs h and reports whether its request was answered early. A
// panic once it was is the run's result for the next round (the handler's
// own recovery would answer the request a second time); before, the
// handler recovers it as usual.
func (s *Server) runAsked(run context.Context, req mcp.CallToolRequest, args json.RawMessage,
	h func(context.Context, json.RawMessage) *toolcall.Result, ex *exchange) (out *toolcall.Result, asked bool) {
	defer func() {
		ex.mu.Lock()
		asked = ex.asked
		ex.finished = true
		ex.mu.Unlock()
		if p := recover(); p != nil {
			if !asked {
				panic(p)
			}
			out = s.panicked(req.Params.Name, p)
		}
	}()
	return h(s.observeWith(run, req, s.newCallClient(run, ex)), args), false
}

// runRecovered runs h on a runner, a goroutine no handler's recovery
// covers, where a panic would end the whole gateway: it becomes the run's
// result instead, as it does on the request's own goroutine.
func (s *Server) runRecovered(run context.Context, name string, args json.RawMessage,
	h func(context.Context, json.RawMessage) *toolcall.Result) (out *toolcall.Result) {
	defer func() {
		if p := recover(); p != nil {
			out = s.panicked(name, p)
		}
	}()
	return h(run, args)
}

// panicked logs a tool run's panic with its stack and is the result the
// client gets for it.
func (s *Server) panicked(name string, p any) *toolcall.Result {
	safe.Report(s.log, "the run of "+name, p)
	return toolcall.Errorf("%s failed with an internal error; the gateway logged it. Try again.", name)
}

// answeredEarly is what a handler returns for a request runInline already
// answered: fastCall writes nothing more for it.
var answeredEarly = &mcp.CallToolResult{}

// earlyAnswer lets a handler answer its request before it returns. The
// read loop provides write; fastCall, which knows how to encode the
// answer, provides send.
type earlyAnswer struct {
	write func(resp []byte)
	send  func(*mcp.CallToolResult)
	// relay is the request's slot for a backend's error to answer with
	// (relay.go): the read loop's requests carry it here, not in a
	// context value of its own, which would cost every call.
	relay relayed
}

type earlyAnswerKey struct{}

func withEarlyAnswer(ctx context.Context, ea *earlyAnswer) context.Context {
	return context.WithValue(ctx, earlyAnswerKey{}, ea)
}

func earlyAnswerFrom(ctx context.Context) *earlyAnswer {
	ea, _ := ctx.Value(earlyAnswerKey{}).(*earlyAnswer)
	return ea
}

func (s *Server) wait(ctx context.Context, req mcp.CallToolRequest, ex *exchange) (*toolcall.Result, *mcp.CallToolResult) {
	for {
		select {
		case out := <-ex.done:
			s.exchanges.remove(ex.token)
			return out, nil
		case <-ex.wake:
			if ask := ex.unsent(); len(ask) > 0 {
				return nil, s.inputRequired(ex, ask)
			}
		case <-ctx.Done():
			s.exchanges.remove(ex.token)
			ex.cancel()
			return toolcall.Errorf("%s: canceled by the client", req.Params.Name), nil
		}
	}
}

// inputRequired answers this round with the run's questions; a client that
// never comes back lets the run end after exchangeIdle.
func (s *Server) inputRequired(ex *exchange, ask mcp.InputRequests) *mcp.CallToolResult {
	ex.mu.Lock()
	if ex.idle != nil {
		ex.idle.Stop()
	}
	ex.idle = time.AfterFunc(exchangeIdle, func() {
		s.exchanges.remove(ex.token)
		ex.cancel()
	})
	ex.mu.Unlock()
	return &mcp.CallToolResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: ask, RequestState: ex.token},
	}
}

// modern reports whether the request uses protocol 2026-07-28 or later.
func modern(ctx context.Context) bool { return server.IsModernRequest(ctx) }

// mcp-go writes a roots/list input request without params, which the
// spec allows and go-sdk v1.8.0 clients cannot decode ("unexpected end of
// JSON input"): kiln sends an empty params object, which both accept.
var (
	bareRoots  = []byte(`{"method":"roots/list"}`)
	rootsEmpty = []byte(`{"method":"roots/list","params":{}}`)
)

func withRootsParams(msg []byte) []byte {
	if !bytes.Contains(msg, bareRoots) {
		return msg
	}
	return bytes.ReplaceAll(msg, bareRoots, rootsEmpty)
}
