package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	backendpkg "github.com/kilnmcp/kiln/runtime/backend"
)

// session stands in for the server's per-call client session (the real
// one is exercised end to end in tests/clientreq_test.go).
type session struct {
	id    string
	asked []string
}

func (s *session) ClientRequest(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	s.asked = append(s.asked, method)
	return json.RawMessage(`{"from":"` + s.id + `"}`), nil
}

func (s *session) SessionID() string { return s.id }

// inFlight registers a call from sess on backend, as CallTool does, until
// the test ends.
func inFlight(t *testing.T, d *Dispatcher, backend string, sess *session) {
	t.Helper()
	ctx := WithObserver(t.Context(), &Observer{Client: sess})
	_, done := d.obs.track(ctx, backend)
	t.Cleanup(done)
}

func TestClientRequestRouting(t *testing.T) {
	ada, ada2, bob := &session{id: "ada"}, &session{id: "ada"}, &session{id: "bob"}
	tests := []struct {
		name    string
		calls   []*session
		method  string
		sole    *session
		want    string // the session that answers, or "" for a refusal
		mention []string
	}{
		{"outside any call", nil, "elicitation/create", nil, "", []string{`kiln refused elicitation/create from backend "b"`, "no client call is in flight"}},
		{"one call", []*session{ada}, "elicitation/create", nil, "ada", nil},
		{"two calls of one session", []*session{ada, ada2}, "sampling/createMessage", nil, "ada", nil},
		{"calls of two sessions", []*session{ada, bob}, "elicitation/create", nil, "", []string{"calls from 2 client sessions", "will not guess", "streamable HTTP or protocol 2026-07-28"}},
		{"sampling outside a call ignores the sole session", nil, "sampling/createMessage", bob, "", []string{"no client call is in flight"}},
		{"roots outside a call go to the sole session", nil, "roots/list", bob, "bob", nil},
		{"roots outside a call with no sole session", nil, "roots/list", nil, "", []string{"exactly one client session with roots"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDispatcher(t)
			d.opts.SoleClient = func() ClientSession {
				if tc.sole == nil {
					return nil
				}
				return tc.sole
			}
			for _, s := range tc.calls {
				inFlight(t, d, "b", s)
			}
			inFlight(t, d, "other", &session{id: "carol"}) // another backend's calls never count
			got, err := d.clientRequest(t.Context(), "b", tc.method, json.RawMessage(`{}`))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("answered %s, want a refusal", got)
				}
				for _, m := range tc.mention {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %q", err, m)
					}
				}
				return
			}
			if err != nil || string(got) != `{"from":"`+tc.want+`"}` {
				t.Errorf("got %s, %v; want an answer from %s", got, err, tc.want)
			}
		})
	}
}

// A call takes a backend's shared session only while no other client
// session has a call in flight there; a question on a client session's
// own backend session goes to that session even while others' calls run.
func TestSessionOwnership(t *testing.T) {
	d := newDispatcher(t)
	ada, bob := &session{id: "ada"}, &session{id: "bob"}
	alone := func(s *session) (func(), bool) {
		_, done, ok := d.obs.trackAlone(WithObserver(t.Context(), &Observer{Client: s}), "b", s.id)
		return done, ok
	}
	doneAda, ok := alone(ada)
	if !ok {
		t.Fatal("ada alone on the shared session: want it taken")
	}
	if done, ok := alone(ada); !ok {
		t.Error("a second call from ada: want the shared session too")
	} else {
		done()
	}
	if _, ok := alone(bob); ok {
		t.Error("bob while ada's call is in flight: want bob sent to a session of his own")
	}
	// Bob's call on his own session, tracked under his key, is answered
	// by bob alone although ada's call is still on the shared one.
	inFlight(t, d, sessionKey("b", "bob"), bob)
	got, err := d.clientRequestOn(t.Context(), "b", sessionKey("b", "bob"), "elicitation/create", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(got), "bob") {
		t.Errorf("question on bob's own session: got %s, %v; want bob's answer", got, err)
	}
	doneAda()
	if done, ok := alone(bob); !ok {
		t.Error("bob after ada's call ended: want the shared session")
	} else {
		done()
	}
}

// waiter is a client session that never answers: its question ends only
// when kiln withdraws it.
type waiter struct{ asked chan struct{} }

func (w *waiter) ClientRequest(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	close(w.asked)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (w *waiter) SessionID() string { return "ada" }

// A question a stdio backend asked during a call is withdrawn when the
// last call of the session it went to ends on that backend (the client
// canceled it, or it timed out): the backend no longer waits for the
// answer (mcp-go's client ignores the backend's notifications/cancelled
// for it), and the client must not be left asking its user for 10 minutes.
func TestQuestionEndsWithItsSessionsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher(t)
		w := &waiter{asked: make(chan struct{})}
		ctx := WithObserver(t.Context(), &Observer{Client: w})
		_, first := d.obs.track(ctx, "b")
		_, second := d.obs.track(ctx, "b")
		answered := make(chan error, 1)
		go func() {
			_, err := d.clientRequest(t.Context(), "b", "elicitation/create", json.RawMessage(`{}`))
			answered <- err
		}()
		<-w.asked
		first()
		synctest.Wait()
		select {
		case err := <-answered:
			t.Fatalf("the question ended with one of the session's two calls: %v", err)
		default:
		}
		second()
		err := <-answered
		if err == nil || !strings.Contains(err.Error(), "ended") {
			t.Errorf("question after its session's calls ended: %v; want it withdrawn, saying why", err)
		}
	})
}

// answerer answers once release is closed.
type answerer struct{ asked, release chan struct{} }

func (a *answerer) ClientRequest(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	close(a.asked)
	select {
	case <-a.release:
		return json.RawMessage(`{"roots":[{"uri":"file:///r"}]}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *answerer) SessionID() string { return "ada" }

// roots/list belongs to the client session, not to the call it was routed
// by: server-filesystem asks it after roots/list_changed, and when the
// client's short call on the backend ended first, kiln withdrew the
// question and the backend kept serving the old folders for good.
func TestRootsListOutlivesTheCallItWasRoutedBy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher(t)
		a := &answerer{asked: make(chan struct{}), release: make(chan struct{})}
		ctx := WithObserver(t.Context(), &Observer{Client: a})
		_, done := d.obs.track(ctx, "b")
		answered := make(chan error, 1)
		go func() {
			res, err := d.clientRequest(t.Context(), "b", "roots/list", json.RawMessage(`{}`))
			if err == nil && !strings.Contains(string(res), "file:///r") {
				err = fmt.Errorf("answer %s", res)
			}
			answered <- err
		}()
		<-a.asked
		done()
		synctest.Wait()
		close(a.release)
		if err := <-answered; err != nil {
			t.Errorf("roots/list after the call that routed it ended: %v; want the client's answer", err)
		}
	})
}

// TestCallAsksForTheObserversLogs: a call asks its backend for log
// messages only when the observer takes them and is not quiet (a
// 2026-07-28 request that named no level gets none, so its backend is
// asked for none instead of info).
func TestCallAsksForTheObserversLogs(t *testing.T) {
	logf := func(json.RawMessage) {}
	for _, tc := range []struct {
		name string
		obs  *Observer
		want backendpkg.CallOptions
	}{
		{"no log taker", &Observer{}, backendpkg.CallOptions{}},
		{"level named", &Observer{Log: logf, LogLevel: "debug"}, backendpkg.CallOptions{Logs: true, LogLevel: "debug"}},
		{"no level named", &Observer{Log: logf}, backendpkg.CallOptions{Logs: true}},
		{"quiet", &Observer{Log: logf, Quiet: true}, backendpkg.CallOptions{}},
	} {
		var o observers
		got, done := o.track(WithObserver(t.Context(), tc.obs), "b")
		done()
		if got != tc.want {
			t.Errorf("%s: call options %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
