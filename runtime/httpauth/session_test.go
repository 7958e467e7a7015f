package httpauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// sessionRig drives a guard in front of fakeMCP with a settable clock.
type sessionRig struct {
	t   *testing.T
	g   *Guard
	mcp *fakeMCP
	h   http.Handler
	now time.Time
}

func newSessionRig(t *testing.T, cfg config.HTTP) *sessionRig {
	rig := &sessionRig{t: t, mcp: newFakeMCP(), now: time.Unix(1_700_000_000, 0)}
	rig.g = newGuard(t, cfg, Options{Now: func() time.Time { return rig.now }})
	rig.h = rig.g.Wrap(rig.mcp)
	return rig
}

// as sends a request from client IP from; hdr are header pairs.
func (rig *sessionRig) as(from, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	r := req(method, target, body, hdr...)
	r.RemoteAddr = from + ":1000"
	return serve(rig.h, r)
}

func (rig *sessionRig) initialize(from string) string {
	rig.t.Helper()
	w := rig.as(from, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	expectStatus(rig.t, w, 200)
	return w.Header().Get(sessionHeader)
}

func (rig *sessionRig) call(from, sid string) *httptest.ResponseRecorder {
	return rig.as(from, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, sessionHeader, sid)
}

func expectBody(t *testing.T, w *httptest.ResponseRecorder, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(w.Body.String(), p) {
			t.Errorf("body %q lacks %q", w.Body.String(), p)
		}
	}
}

// TestUnknownSession checks ids that were never issued, or belong to
// someone else, get 404 on every method, and the SDK never sees them.
func TestUnknownSession(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{})
	mine := rig.initialize("10.0.0.1")
	before := rig.mcp.calls.Load()
	for _, tc := range []struct{ name, from, method, sid string }{
		{"forged POST", "10.0.0.1", "POST", "mcp-session-00000000-0000-0000-0000-000000000000"},
		{"forged GET stream", "10.0.0.1", "GET", "forged"},
		{"forged DELETE", "10.0.0.1", "DELETE", "x"},
		{"another client's id", "10.0.0.2", "POST", mine},
		{"another client's id on GET", "10.0.0.2", "GET", mine},
		{"synthetic stream id", "10.0.0.1", "POST", "stream 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_tools"}}`
			}
			w := rig.as(tc.from, tc.method, "/mcp", body, sessionHeader, tc.sid)
			expectStatus(t, w, 404)
			expectBody(t, w, "is not open", "never issued", "send initialize without an Mcp-Session-Id")
		})
	}
	if got := rig.mcp.calls.Load(); got != before {
		t.Errorf("handler saw %d requests with unknown sessions", got-before)
	}
	expectStatus(t, rig.call("10.0.0.1", mine), 200)
}

// TestStatelessProtocolUntouched checks 2026-07-28 requests, which have no
// sessions, pass whatever Mcp-Session-Id they carry, and open nothing.
func TestStatelessProtocolUntouched(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{MaxSessions: 1})
	for range 3 {
		w := rig.as("10.0.0.1", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			protocolHeader, "2026-07-28", sessionHeader, "ignored")
		expectStatus(t, w, 200)
	}
	if n := rig.g.sessions.held("addr 10.0.0.1"); n != 0 {
		t.Errorf("stateless requests hold %d sessions", n)
	}
}

// TestSessionEnds checks DELETE, a server 404 and idle time end sessions,
// each with its own reason, and that eviction terminates the session in
// the handler too.
func TestSessionEnds(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{SessionIdle: 5 * time.Minute})
	const c = "10.0.0.1"
	s1, s2, s3 := rig.initialize(c), rig.initialize(c), rig.initialize(c)

	expectStatus(t, rig.as(c, "DELETE", "/mcp", "", sessionHeader, s1), 200)
	expectBody(t, rig.call(c, s1), "closed it with DELETE")

	delete(rig.mcp.live, s2)
	expectStatus(t, rig.call(c, s2), 404)
	expectBody(t, rig.call(c, s2), "no longer knew it")

	// s3 is used at minute 4, so it outlives a session opened at minute 0
	// that nobody uses.
	s4 := rig.initialize(c)
	rig.now = rig.now.Add(4 * time.Minute)
	expectStatus(t, rig.call(c, s3), 200)
	rig.now = rig.now.Add(2 * time.Minute)
	rig.g.Sweep()
	expectStatus(t, rig.call(c, s3), 200)
	w := rig.call(c, s4)
	expectStatus(t, w, 404)
	expectBody(t, w, "idle longer than gateway.http.session_idle (5m0s)")
	if rig.mcp.live[s4] {
		t.Error("the idle session was not terminated in the handler")
	}
	if n := rig.g.sessions.held("addr " + c); n != 1 {
		t.Errorf("held = %d, want 1", n)
	}
}

// TestSessionCapEvictsIdle checks an identity at its cap loses its least
// recently used idle session instead of being refused, and is refused only
// when every session is busy.
func TestSessionCapEvictsIdle(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{MaxSessions: 2})
	const c = "10.0.0.1"
	a := rig.initialize(c)
	rig.now = rig.now.Add(time.Second)
	b := rig.initialize(c)
	rig.now = rig.now.Add(time.Second)
	expectStatus(t, rig.call(c, a), 200) // a is now more recent than b
	rig.now = rig.now.Add(time.Second)
	d := rig.initialize(c)
	expectStatus(t, rig.call(c, a), 200)
	expectStatus(t, rig.call(c, d), 200)
	w := rig.call(c, b)
	expectStatus(t, w, 404)
	expectBody(t, w, "least recently used", "gateway.http.max_sessions")
	if rig.mcp.live[b] {
		t.Error("the evicted session was not terminated in the handler")
	}

	// Both sessions busy (a stream open on each): the next is refused.
	release := rig.hold(c, a)
	defer release()
	release2 := rig.hold(c, d)
	defer release2()
	w = rig.as(c, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	expectStatus(t, w, 429)
	expectBody(t, w, "limit 2", "gateway.http.max_sessions", "DELETE /mcp")
	// Another identity is not affected.
	rig.initialize("10.0.0.2")
}

// hold opens a request on sid and keeps it open until release is called.
func (rig *sessionRig) hold(from, sid string) (release func()) {
	rig.t.Helper()
	end, _, why, ok := rig.g.sessions.begin("addr "+from, sid, false, func() {})
	if !ok {
		rig.t.Fatalf("hold %s: %s", sid, why)
	}
	return end
}

// TestNoStarvation checks one identity filling its cap leaves the total
// for everyone else, and that the total evicts the oldest idle session
// rather than refusing a newcomer.
func TestNoStarvation(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{MaxSessions: 3, MaxSessionsTotal: 5})
	for range 20 {
		rig.initialize("10.0.0.66") // a runaway client churns its own 3
		rig.now = rig.now.Add(time.Second)
	}
	if n := rig.g.sessions.held("addr 10.0.0.66"); n != 3 {
		t.Fatalf("runaway holds %d, want 3", n)
	}
	x := rig.initialize("10.0.0.1")
	y := rig.initialize("10.0.0.2")
	rig.now = rig.now.Add(time.Second)
	// At the total of 5: a third identity evicts the oldest idle session,
	// which is the runaway's.
	z := rig.initialize("10.0.0.3")
	for _, c := range []struct{ from, sid string }{{"10.0.0.1", x}, {"10.0.0.2", y}, {"10.0.0.3", z}} {
		expectStatus(t, rig.call(c.from, c.sid), 200)
	}
	if n := rig.g.sessions.held("addr 10.0.0.66"); n != 2 {
		t.Errorf("runaway holds %d after the total evicted one, want 2", n)
	}
}

// TestStreams checks GET streams are sessions: /sse and GET /mcp without
// an id count against the cap while open and free it when closed, a
// session keeps one GET stream (a new one replaces the old), and eviction
// cancels a stream.
func TestStreams(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{MaxSessions: 1})
	const c = "10.9.8.7"
	var during int
	var second int
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = rig.g.sessions.held("addr " + c)
		second = serve(rig.h, req("GET", "/sse", "")).Code
	})
	g2 := rig.g.Wrap(inner)
	expectStatus(t, serve(g2, req("GET", "/sse", "")), 200)
	if during != 1 || second != 429 {
		t.Errorf("during a stream: held %d (want 1), second stream %d (want 429)", during, second)
	}
	if n := rig.g.sessions.held("addr " + c); n != 0 {
		t.Errorf("held after the stream = %d, want 0", n)
	}

	// One GET stream per session: opening another cancels the first.
	rig2 := newSessionRig(t, config.HTTP{})
	sid := rig2.initialize(c)
	first := make(chan context.Context, 1)
	end1, replaced, _, ok := rig2.g.sessions.begin("addr "+c, sid, true, func() { first <- nil })
	if !ok || replaced != nil {
		t.Fatalf("begin: ok %v, replaced %v", ok, replaced)
	}
	end2, replaced, _, _ := rig2.g.sessions.begin("addr "+c, sid, true, func() {})
	defer end2()
	select {
	case <-first:
	default:
		t.Error("a second GET stream did not cancel the first")
	}
	select {
	case <-replaced:
		t.Fatal("replaced is done before the first stream returned")
	default:
	}
	end1()
	<-replaced // closed by the first stream's end
}

// TestSessionsPerSubject checks that with JWTs the cap and the ownership
// of sessions follow the token's subject, not the address: two subjects
// behind one address do not share a cap, and one cannot use the other's
// session.
func TestSessionsPerSubject(t *testing.T) {
	k := testKeys()
	srv := newJWKSServer(t, ecJWK("e1", &k.ec.PublicKey))
	c := &clock{t0}
	g := newGuard(t, config.HTTP{JWTIssuer: issuer, JWKSURL: srv.URL, MaxSessions: 2},
		Options{Client: srv.Client(), Now: c.now})
	mcp := newFakeMCP()
	h := g.Wrap(mcp)
	tok := func(sub string) []string {
		return []string{"Authorization", "Bearer " + sign(t, map[string]any{"alg": "ES256", "kid": "e1"}, claims(func(m map[string]any) { m["sub"] = sub }), k.ec)}
	}
	alice, bob := tok("alice"), tok("bob")
	init := func(auth []string) *httptest.ResponseRecorder {
		return serve(h, req("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, auth...))
	}
	var aliceIDs []string
	for range 2 {
		w := init(alice)
		expectStatus(t, w, 200)
		aliceIDs = append(aliceIDs, w.Header().Get(sessionHeader))
	}
	if n := g.sessions.held("sub alice"); n != 2 {
		t.Fatalf("alice holds %d, want 2", n)
	}
	b := init(bob).Header().Get(sessionHeader)
	if n := g.sessions.held("sub bob"); n != 1 || b == "" {
		t.Fatalf("bob holds %d (session %q), want 1", n, b)
	}
	// Bob cannot use Alice's session, nor she his.
	w := serve(h, req("POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, append([]string{sessionHeader, aliceIDs[0]}, bob...)...))
	expectStatus(t, w, 404)
	w = serve(h, req("POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, append([]string{sessionHeader, b}, alice...)...))
	expectStatus(t, w, 404)
	w = serve(h, req("POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, append([]string{sessionHeader, b}, bob...)...))
	expectStatus(t, w, 200)
}

// TestProtectLeavesEvictionsToTheMCPHandler: guarding another route of the
// listener (/metrics, the console) after Wrap must not take over the
// handler evicted sessions are ended in (Wrap did, for /metrics).
func TestProtectLeavesEvictionsToTheMCPHandler(t *testing.T) {
	rig := newSessionRig(t, config.HTTP{MaxSessions: 1})
	other := newFakeMCP()
	rig.g.Protect(other)
	const c = "10.0.0.1"
	a := rig.initialize(c)
	rig.now = rig.now.Add(time.Second)
	rig.initialize(c)
	if rig.mcp.live[a] {
		t.Error("the evicted session was not ended in the MCP handler after Protect guarded another")
	}
}
