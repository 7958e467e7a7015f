//go:build e2e

package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kilnmcp/kiln/runtime/state/redistest"
)

// callDeadline bounds every call a fleet client makes, re-initializing
// included.
const callDeadline = 5 * time.Second

// fleetClient is one real MCP client of the fleet, going through HAProxy.
type fleetClient struct {
	name string
	tap  *replicaTap
	// call makes one tool call through kiln; gone reports an error
	// meaning the server no longer knows the session (404); renew is what
	// the client library expects of its user then.
	call  func(ctx context.Context, text string) error
	gone  func(err error) bool
	renew func(ctx context.Context) error
}

func echoCode(text string) string {
	return fmt.Sprintf(`{"tool":"web.echo","arguments":{"text":%q}}`, text)
}

// newMCPGoFleetClient: mcp-go's client answers a 404 on its session with
// ErrSessionTerminated and accepts a new initialize on the same client.
func newMCPGoFleetClient(t *testing.T, name, front string) *fleetClient {
	t.Helper()
	tap := &replicaTap{}
	c, err := mcpclient.NewStreamableHttpClient(front+"/mcp", transport.WithHTTPBasicClient(&http.Client{Transport: tap}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize := func(ctx context.Context) error {
		_, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
			ProtocolVersion: "2025-11-25", ClientInfo: mcpgo.Implementation{Name: name, Version: "1"}}})
		return err
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &fleetClient{name: name, tap: tap,
		call: func(ctx context.Context, text string) error {
			res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": echoCode(text)}}})
			if err != nil {
				return err
			}
			r, _ := toResult(res.Content, nil, res.IsError)
			return checkEcho(r, text)
		},
		gone:  func(err error) bool { return errors.Is(err, transport.ErrSessionTerminated) },
		renew: initialize,
	}
}

// newSDKFleetClient: the go-sdk's client session ends for good on a
// transport failure (ErrSessionMissing on a 404); its user connects again.
func newSDKFleetClient(t *testing.T, name, front string) *fleetClient {
	t.Helper()
	tap := &replicaTap{}
	var mu sync.Mutex
	var cs *sdk.ClientSession
	connect := func(ctx context.Context) error {
		c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil)
		next, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: front + "/mcp", HTTPClient: &http.Client{Transport: tap}}, nil)
		if err != nil {
			return err
		}
		mu.Lock()
		if cs != nil {
			cs.Close()
		}
		cs = next
		mu.Unlock()
		return nil
	}
	if err := connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ir := cs.InitializeResult(); ir != nil {
		t.Logf("fleet: %s speaks %s (session id %q)", name, ir.ProtocolVersion, cs.ID())
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		cs.Close()
	})
	return &fleetClient{name: name, tap: tap,
		call: func(ctx context.Context, text string) error {
			mu.Lock()
			s := cs
			mu.Unlock()
			res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool_chain", Arguments: map[string]any{"code": echoCode(text)}})
			if err != nil {
				return err
			}
			r, _ := toResult(res.Content, nil, res.IsError)
			return checkEcho(r, text)
		},
		// Any transport error ends a go-sdk session; a tool error does not.
		gone:  func(err error) bool { return !errors.Is(err, errWrongAnswer) },
		renew: connect,
	}
}

var errWrongAnswer = errors.New("wrong answer")

func checkEcho(r result, text string) error {
	if r.IsError || !strings.Contains(r.Text(), text) {
		return fmt.Errorf("%w: %s", errWrongAnswer, r.Text())
	}
	return nil
}

// outcome is one call as its client saw it.
type outcome struct {
	client     string
	start, end time.Time
	err        error
	reinit     bool // the server had forgotten the session: re-initialized, then retried
}

// load drives the clients until ctx ends, each call bounded by
// callDeadline; a call answered 404 re-initializes and is retried once, as
// the spec asks of a client whose session the server forgot.
func load(ctx context.Context, clients []*fleetClient) <-chan []outcome {
	done := make(chan []outcome, 1)
	var mu sync.Mutex
	var all []outcome
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				text := fmt.Sprintf("%s-%d", c.name, i)
				o := outcome{client: c.name, start: time.Now()}
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callDeadline)
				err := c.call(cctx, text)
				if err != nil && c.gone(err) {
					o.reinit = true
					if err = c.renew(cctx); err == nil {
						err = c.call(cctx, text)
					}
				}
				cancel()
				o.end, o.err = time.Now(), err
				mu.Lock()
				all = append(all, o)
				mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		done <- all
	}()
	return done
}

// TestFleet runs two kiln replicas sharing Redis behind a real HAProxy
// with sticky sessions, under load from real clients: mcp-go on stateful
// 2025-11-25 sessions and the go-sdk on stateless 2026-07-28: a backend registered on one replica is callable on the other
// within a second; kill -9 of that replica mid-load loses only calls in
// flight, every client is served by the survivor afterwards (those whose
// session lived on the dead replica get 404 and re-initialize), and the
// registration survives; then a rolling restart (SIGTERM, drain, start)
// of both replicas under load loses no call.
func TestFleet(t *testing.T) {
	haproxy := needBin(t, "haproxy", "haproxy")
	rds := redistest.StartTCP(t)
	web := startFaultHTTPServer(t)
	webHost := strings.TrimSuffix(strings.TrimPrefix(web, "http://"), "/mcp")
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  state_url: %s
  drain_timeout: 10s
  registration:
    allow_hosts: [%q]
  http:
    max_connections_per_client: 1024
    max_sessions: 1000
backends: {}
`, t.TempDir(), rds.URL, webHost)), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := []int{freePort(t), freePort(t)}
	rs := []*replica{startReplica(t, "k1", cfg, ports[0]), startReplica(t, "k2", cfg, ports[1])}
	front := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	var frontPort int
	fmt.Sscanf(front, "http://127.0.0.1:%d", &frontPort)
	startHAProxy(t, haproxy, frontPort, rs)

	// Registered on k1, callable on k2 within a second.
	direct := newMCPGoHTTP(t, rs[0].base())
	registered := time.Now()
	if r, err := direct.Call(t.Context(), "register_manual", map[string]any{"manual_call_template": map[string]any{"name": "web", "transport": "http", "url": web}}); err != nil || r.IsError {
		t.Fatalf("register_manual on k1: %v %s", err, r.Text())
	}
	k2 := newMCPGoHTTP(t, rs[1].base())
	seen := time.Duration(-1)
	for time.Since(registered) < time.Second {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		r, err := k2.Call(ctx, "call_tool_chain", map[string]any{"code": echoCode("on k2")})
		cancel()
		if err == nil && !r.IsError {
			seen = time.Since(registered)
			break
		}
	}
	if seen < 0 {
		t.Fatalf("a backend registered on k1 was not callable on k2 within 1s; k2's log:\n%s", rs[1].logged())
	}
	t.Logf("fleet: registered on k1, callable on k2 after %s", seen.Round(time.Millisecond))

	// A stateful session pinned to k1, to probe after the kill.
	var probeSID string
	for range 4 {
		sid, on, err := rawInitialize(t.Context(), front)
		if err != nil {
			t.Fatal(err)
		}
		if on == "k1" {
			probeSID = sid
			break
		}
	}
	if probeSID == "" {
		t.Fatal("HAProxy placed no probe session on k1 in 4 round-robin tries")
	}

	// Stateful mcp-go sessions on both replicas (round robin places them;
	// other traffic may skew it), and go-sdk clients, which speak
	// 2026-07-28 to kiln when it answers server/discover.
	var clients []*fleetClient
	placed := map[string]int{}
	for i := 0; i < 8 && (placed["k1"] == 0 || placed["k2"] == 0 || i < 3); i++ {
		c := newMCPGoFleetClient(t, fmt.Sprintf("mcpgo%d", i), front)
		placed[c.tap.replica()]++
		clients = append(clients, c)
	}
	if placed["k1"] == 0 || placed["k2"] == 0 {
		t.Fatalf("mcp-go sessions by replica: %v; want some on each", placed)
	}
	for i := range 3 {
		clients = append(clients, newSDKFleetClient(t, fmt.Sprintf("gosdk%d", i), front))
	}
	runCtx, stopLoad := context.WithCancel(t.Context())
	defer stopLoad()
	results := load(runCtx, clients)
	time.Sleep(1500 * time.Millisecond) // load before the kill: a duration under test, not a wait for a signal
	var onK1 []string
	for _, c := range clients {
		if c.tap.replica() == "k1" && strings.HasPrefix(c.name, "mcpgo") {
			onK1 = append(onK1, c.name)
		}
	}
	killed := time.Now()
	if err := rs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-rs[0].exited
	time.Sleep(3 * time.Second) // load on the survivor alone

	// The probe session lived on k1: the survivor answers 404 so the client
	// initializes again.
	res, err := rawPost(t.Context(), front, probeSID, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || res.Header.Get("X-Kiln-Replica") != "k2" {
		t.Errorf("a session of the dead replica: %s from %q; want 404 from k2", res.Status, res.Header.Get("X-Kiln-Replica"))
	}

	// Rolling restart: k1 comes back, then each replica in turn is
	// drained (SIGTERM) and started again.
	rollStart := time.Now()
	rs[0] = startReplica(t, "k1", cfg, ports[0])
	awaitInRotation(t, front, "k1")
	for i := range rs {
		rs[i].stop(t, syscall.SIGTERM)
		rs[i] = startReplica(t, rs[i].name, cfg, ports[i])
		// As an operator's rollout waits for readiness: the next replica
		// goes down only once HAProxy sends traffic to this one again.
		awaitInRotation(t, front, rs[i].name)
	}
	time.Sleep(time.Second) // load on the restarted fleet
	rollEnd := time.Now()
	stopLoad()
	var all []outcome
	select {
	case all = <-results:
	case <-time.After(2 * callDeadline):
		t.Fatal("clients did not stop within two call deadlines")
	}
	checkFleet(t, all, clients, onK1, killed, rollStart, rollEnd)

	// Nothing registered is lost: each restarted replica serves web.
	for _, r := range rs {
		s := newMCPGoHTTP(t, r.base())
		if res, err := s.Call(t.Context(), "call_tool_chain", map[string]any{"code": echoCode("after " + r.name)}); err != nil || checkEcho(res, "after "+r.name) != nil {
			t.Errorf("restarted %s does not serve the registered backend: %v %s", r.name, err, res.Text())
		}
	}
}

// awaitInRotation waits (at most 10s) until HAProxy routes a request to
// the named replica, which round robin does once its health check passes.
func awaitInRotation(t *testing.T, front, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(front + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.Header.Get("X-Kiln-Replica") == name {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("HAProxy did not route to %s within 10s of it being ready", name)
}

// checkFleet asserts the outcomes and logs the figures.
func checkFleet(t *testing.T, all []outcome, clients []*fleetClient, onK1 []string, killed, rollStart, rollEnd time.Time) {
	t.Helper()
	var before, inFlight, afterOK, afterFailed, rollOK, rollFailed int
	recovered := map[string]time.Time{}
	reinitAfterKill, reinitRoll := map[string]int{}, map[string]int{}
	slices.SortFunc(all, func(a, b outcome) int { return a.start.Compare(b.start) })
	for _, o := range all {
		if took := o.end.Sub(o.start); took > callDeadline+time.Second {
			t.Errorf("%s waited %s for a call, past its %s deadline", o.client, took, callDeadline)
		}
		switch {
		case o.end.Before(killed):
			before++
			if o.err != nil {
				t.Errorf("%s: a call before the kill failed: %v", o.client, o.err)
			}
		case o.start.Before(rollStart):
			if o.reinit {
				reinitAfterKill[o.client]++
			}
			if o.start.Before(killed) {
				inFlight++
			}
			if o.err != nil {
				afterFailed++
				if _, ok := recovered[o.client]; ok || !o.start.Before(killed) {
					t.Errorf("%s: a call after the kill failed: %v", o.client, o.err)
				}
				continue
			}
			afterOK++
			if _, ok := recovered[o.client]; !ok {
				recovered[o.client] = o.end
			}
		default:
			if o.reinit {
				reinitRoll[o.client]++
			}
			if o.err != nil {
				rollFailed++
				t.Errorf("%s: a call during the rolling restart failed: %v", o.client, o.err)
			} else {
				rollOK++
			}
		}
	}
	var slowest time.Duration
	for _, c := range clients {
		at, ok := recovered[c.name]
		if !ok {
			t.Errorf("%s was never served after the kill", c.name)
			continue
		}
		slowest = max(slowest, at.Sub(killed))
	}
	for _, name := range onK1 {
		if reinitAfterKill[name] == 0 {
			t.Errorf("%s's stateful session lived on the killed replica but it never re-initialized", name)
		}
	}
	t.Logf("fleet: %d calls before the kill; after kill -9 of k1: %d served, %d failed (%d were in flight), every client served again within %s; mcp-go sessions on k1 at the kill: %v; re-initialized after a 404 or a lost connection: %v",
		before, afterOK, afterFailed, inFlight, slowest.Round(time.Millisecond), onK1, reinitAfterKill)
	t.Logf("fleet: rolling restart of both replicas under load (%s): %d calls served, %d failed; re-initialized: %v", rollEnd.Sub(rollStart).Round(100*time.Millisecond), rollOK, rollFailed, reinitRoll)
}

// TestFleetStateDown: Redis that does not answer at start stops kiln with
// an error naming the key and the fix; Redis lost later is logged once,
// calls go on, and a registration is refused rather than made on one
// replica only.
func TestFleetStateDown(t *testing.T) {
	rds := redistest.StartTCP(t)
	web := startFaultHTTPServer(t)
	webHost := strings.TrimSuffix(strings.TrimPrefix(web, "http://"), "/mcp")
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  state_url: %s\n  registration:\n    allow_hosts: [%q]\nbackends: {}\n",
		t.TempDir(), rds.URL, webHost)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "k1", cfg, freePort(t))
	s := newMCPGoHTTP(t, r.base())
	tpl := func(name string) map[string]any {
		return map[string]any{"manual_call_template": map[string]any{"name": name, "transport": "http", "url": web}}
	}
	if res, err := s.Call(t.Context(), "register_manual", tpl("web")); err != nil || res.IsError {
		t.Fatalf("register_manual: %v %s", err, res.Text())
	}
	rds.Stop()
	eventually(t, "kiln logs that shared state is unreachable", func() bool {
		return strings.Contains(r.logged(), "shared state unreachable")
	})
	if h := readHealth(t, r.base()); !strings.Contains(h, "; shared state unreachable") || !strings.Contains(h, `"backend": "(shared state)"`) {
		t.Errorf("kiln://health with Redis down does not say so:\n%s", h)
	}
	if res, err := s.Call(t.Context(), "call_tool_chain", map[string]any{"code": echoCode("redis down")}); err != nil || checkEcho(res, "redis down") != nil {
		t.Errorf("a call with Redis down: %v %s", err, res.Text())
	}
	res, err := s.Call(t.Context(), "register_manual", tpl("web2"))
	if err != nil || !res.IsError || !strings.Contains(res.Text(), "could not save the registration") {
		t.Errorf("register_manual with Redis down: %v %s; want a refusal saying the registration could not be saved", err, res.Text())
	}

	down := startOpsKilnExpectExit(t, cfg)
	for _, want := range []string{"gateway.state_url: Redis at " + rds.Addr + " did not answer", "start it or fix the URL"} {
		if !strings.Contains(down, want) {
			t.Errorf("kiln started with Redis down said:\n%s\nwant it to say %q", down, want)
		}
	}
}

// readHealth reads kiln://health with an mcp-go client.
func readHealth(t *testing.T, base string) string {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpgo.Implementation{Name: "health", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ReadResource(t.Context(), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "kiln://health"}})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, rc := range res.Contents {
		if tc, ok := rc.(mcpgo.TextResourceContents); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// startOpsKilnExpectExit runs kiln serve on cfg, which must make it exit
// non-zero within 30s, and returns its stderr.
func startOpsKilnExpectExit(t *testing.T, cfg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kilnBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("kiln did not exit with an error (err %v):\n%s", err, out)
	}
	return string(out)
}

// TestOAuthFleetSharesTokens: with gateway.state_url, kiln auth login
// stores the token in Redis, and two replicas with separate state_dirs
// call a backend behind OAuth, refreshing its short-lived token under the
// fleet-wide lock: no call fails, none falls to needs_login, and no token
// file is written.
func TestOAuthFleetSharesTokens(t *testing.T) {
	rds := redistest.StartTCP(t)
	rig := startOAuthRig(t)
	states := []string{t.TempDir(), t.TempDir()}
	var cfgs []string
	for _, st := range states {
		text := strings.Replace(rig.config(t, st), "gateway:\n", "gateway:\n  state_url: "+rds.URL+"\n", 1)
		cfgs = append(cfgs, text)
	}
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte(cfgs[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kilnAuth(t, cfg, "login", "hosted"); err != nil || !strings.Contains(out, "shared state") {
		t.Fatalf("login: %v\n%s", err, out)
	}
	ks := []*faultKiln{startFaultKilnWith(t, cfgs[0]), startFaultKilnWith(t, cfgs[1])}
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for _, k := range ks {
		name := toolNamed(t, k, "hosted", "whoami")
		wg.Go(func() {
			for i := range 10 {
				if r := k.call(t.Context(), name, nil, nil); r.IsError || r.Text() != "user alice" {
					errs <- fmt.Sprintf("call %d: isError=%v %q", i, r.IsError, r.Text())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := rig.refreshes.Load(); n < 2 {
		t.Errorf("%d refreshes; the test needs both replicas refreshing", n)
	}
	if slices.ContainsFunc(ks, func(k *faultKiln) bool { return k.logged("refresh token was refused") }) {
		t.Error("a replica fell to needs_login")
	}
	for _, st := range states {
		if _, err := os.Stat(filepath.Join(st, "oauth", "hosted.json")); err == nil {
			t.Errorf("a token file was written in %s although tokens live in Redis", st)
		}
	}
	if out, err := kilnAuth(t, cfg, "status"); err != nil || !strings.Contains(out, "hosted: logged in") {
		t.Errorf("kiln auth status with state_url: %v\n%s", err, out)
	}
}
