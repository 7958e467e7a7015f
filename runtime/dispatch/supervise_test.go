package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// With KILN_TEST_SUPERVISED set, the test binary is a real mcp-go stdio
// server whose tools misbehave on request; "exit" makes it fail at start.
func init() {
	mode := os.Getenv("KILN_TEST_SUPERVISED")
	switch mode {
	case "":
		return
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: cannot start")
		os.Exit(2)
	case "slow":
		// Connects late, as a backend that loads a lot at start does.
		time.Sleep(300 * time.Millisecond)
	case "once", "gate":
		// The first instance serves; a later one (a client session's own
		// backend session) fails at start, as a backend that locks its
		// data does, or waits at a gate the test opens.
		marker := os.Getenv("KILN_TEST_ONCE")
		if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		} else if mode == "once" {
			fmt.Fprintln(os.Stderr, "fatal: another instance holds", marker)
			os.Exit(2)
		} else {
			awaitGate(os.Getenv("KILN_TEST_GATE"))
		}
	}
	//lint:ignore SA1019 a server that asks in-band, as servers before 2026-07-28 do
	legacyAsks := server.WithLegacyServerInitiatedRequests()
	s := server.NewMCPServer("supervised", "1", server.WithToolCapabilities(true),
		server.WithPromptCapabilities(false), server.WithResourceCapabilities(false, false), legacyAsks)
	// A prompt that samples while it renders, as a tool may.
	s.AddPrompt(mcp.NewPrompt("sampled"), func(ctx context.Context, _ mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		//lint:ignore SA1019 a server that samples in-band, as servers before 2026-07-28 do
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}, MaxTokens: 5}})
		if err != nil {
			return nil, err
		}
		text, _ := res.Content.(mcp.TextContent)
		return mcp.NewGetPromptResult("sampled", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleAssistant, mcp.NewTextContent(text.Text))}), nil
	})
	// In "roots" mode the server asks its client for roots once it is
	// initialized and whenever they change, as server-filesystem does;
	// the roots tool waits for the n-th answer and tells it.
	var rootsMu sync.Mutex
	var rootsGot []string
	rootsMore := make(chan struct{})
	askRoots := func(ctx context.Context, _ mcp.JSONRPCNotification) {
		if mode != "roots" {
			return
		}
		go func() {
			res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
			got := fmt.Sprint("error: ", err)
			if err == nil {
				var names []string
				for _, r := range res.Roots {
					names = append(names, r.Name)
				}
				got = "roots: " + strings.Join(names, ",")
			}
			rootsMu.Lock()
			rootsGot = append(rootsGot, got)
			close(rootsMore)
			rootsMore = make(chan struct{})
			rootsMu.Unlock()
		}()
	}
	s.AddNotificationHandler("notifications/initialized", askRoots)
	s.AddNotificationHandler("notifications/roots/list_changed", askRoots)
	s.AddTool(mcp.NewTool("roots"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("n", 1)
		for {
			rootsMu.Lock()
			got, more := rootsGot, rootsMore
			rootsMu.Unlock()
			if len(got) >= n {
				return mcp.NewToolResultText(got[n-1]), nil
			}
			select {
			case <-more:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	})
	s.AddResource(mcp.NewResource("sup://hang", "hang"), func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(mcp.NewTool("sample"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 a server that samples in-band during a tool call
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}}, MaxTokens: 5}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		text, _ := res.Content.(mcp.TextContent)
		return mcp.NewToolResultText(text.Text), nil
	})
	s.AddTool(mcp.NewTool("pid"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strconv.Itoa(os.Getpid())), nil
	})
	s.AddTool(mcp.NewTool("die"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "panic: die called")
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := server.ServerFromContext(ctx)
		for i := 1; i <= 3; i++ {
			total := 3.0
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": total, "message": fmt.Sprintf("step %d", i)})
		}
		// mcp-go queues notifications on another goroutine than responses;
		// a real tool reports progress while it works, so work a little.
		time.Sleep(200 * time.Millisecond)
		return mcp.NewToolResultText("done"), nil
	})
	if err := server.ServeStdio(s); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// awaitGate tells the test listening on the unix socket at path this
// process's pid and waits for one byte back before the process serves.
func awaitGate(path string) {
	c, err := net.Dial("unix", path)
	if err != nil {
		os.Exit(4)
	}
	fmt.Fprintf(c, "%d\n", os.Getpid())
	if _, err := c.Read(make([]byte, 1)); err != nil {
		os.Exit(4)
	}
	c.Close()
}

// supervised starts a dispatcher over one backend run by this test binary
// and waits for its first connect attempt.
func supervised(t *testing.T, mode string, tune func(*config.Config)) *Dispatcher {
	t.Helper()
	d := supervisedStarted(t, mode, tune)
	if err := d.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return d
}

// supervisedStarted is supervised without the wait: the backend may still
// be connecting when it returns.
func supervisedStarted(t *testing.T, mode string, tune func(*config.Config)) *Dispatcher {
	t.Helper()
	return supervisedWith(t, mode, tune, Options{})
}

// supervisedWith is supervisedStarted with the dispatcher's options.
func supervisedWith(t *testing.T, mode string, tune func(*config.Config), opts Options) *Dispatcher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	var tools []manifest.Tool
	for _, n := range []string{"pid", "die", "wait", "progress", "roots", "sample"} {
		tools = append(tools, manifest.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	if err := reg.Add(&manifest.Manifest{Version: 1, Backend: "sup", Tools: tools}, true); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Gateway: config.DefaultGateway(), Backends: []config.Backend{{
		Name: "sup", Transport: config.TransportStdio, Command: exe, Enabled: true,
		Env: map[string]string{"KILN_TEST_SUPERVISED": mode}, Timeout: 20 * time.Second,
		MaxConcurrent: 10, QueueWait: time.Second,
	}}}
	cfg.Gateway.ConnectTimeout = 20 * time.Second
	if tune != nil {
		tune(cfg)
	}
	d := New(reg, cfg, opts)
	d.firstRetry, d.maxRetry = 20*time.Millisecond, 100*time.Millisecond
	d.Start(t.Context())
	t.Cleanup(func() { d.Close() })
	return d
}

func TestFirstCallWaitsForAStartingBackend(t *testing.T) {
	d := supervisedStarted(t, "slow", nil)
	if st := d.Status()[0]; st.State != StateStarting {
		t.Fatalf("state right after Start = %s, want starting", st.State)
	}
	res, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if err != nil {
		t.Fatalf("first call while the backend connects: %v", err)
	}
	if _, err := strconv.Atoi(res.TextContent()); err != nil {
		t.Errorf("first call answered %q, want the backend's pid", res.TextContent())
	}
}

func TestFirstCallToABackendThatFailsToStartFailsAtOnce(t *testing.T) {
	// The call waits while the backend starts, but its failure ends the
	// wait: the call does not sit out its whole 20 s timeout.
	d := supervisedStarted(t, "exit", nil)
	_, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "fatal: cannot start") || !strings.Contains(err.Error(), "kiln://backend/sup") {
		t.Fatalf("call to a backend that failed to start: %v", err)
	}
}

func TestWaitingCallKeepsItsTimeout(t *testing.T) {
	d := supervisedStarted(t, "slow", func(c *config.Config) { c.Backends[0].Timeout = 50 * time.Millisecond })
	_, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if CodeOf(err) != CodeStarting || !strings.Contains(err.Error(), "within the call's timeout (50ms)") {
		t.Fatalf("call whose timeout ends before the backend connects: %v", err)
	}
}

// waitFor polls the backend's status until ok holds or the test's
// deadline passes.
func waitFor(t *testing.T, d *Dispatcher, what string, ok func(Status) bool) Status {
	t.Helper()
	for {
		st := d.Status()[0]
		if ok(st) {
			return st
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("never %s; last status %+v", what, st)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestCrashMidCallFailsFastThenRestarts(t *testing.T) {
	d := supervised(t, "serve", nil)
	first, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.CallTool(t.Context(), "sup", "die", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "stopped while running it") || !strings.Contains(err.Error(), "panic: die called") {
		t.Fatalf("call that killed the backend: %v", err)
	}
	st := waitFor(t, d, "restarted", func(s Status) bool { return s.State == StateHealthy && s.Restarts == 1 })
	if st.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", st.Restarts)
	}
	second, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.TextContent() == second.TextContent() {
		t.Errorf("same pid %s after a restart", first.TextContent())
	}
}

func TestRestartStormIsCapped(t *testing.T) {
	d := supervised(t, "exit", nil)
	st := waitFor(t, d, "given up", func(s Status) bool { return s.GaveUp })
	if st.State != StateUnhealthy || st.Restarts != maxRestarts || !strings.Contains(st.Error, "stopped restarting") || !strings.Contains(st.Error, "fatal: cannot start") {
		t.Fatalf("status after the storm: %+v", st)
	}
	_, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "stopped restarting") {
		t.Fatalf("call after giving up: %v", err)
	}
}

func TestHungBackendOpensCircuitAndRecovers(t *testing.T) {
	d := supervised(t, "serve", func(c *config.Config) {
		c.Gateway.Health = config.Health{Interval: 100 * time.Millisecond, Timeout: 50 * time.Millisecond, Failures: 2}
	})
	res, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(res.TextContent())
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	st := waitFor(t, d, "unhealthy", func(s Status) bool { return s.State == StateUnhealthy })
	if !strings.Contains(st.Error, "health probes failed in a row") || st.NextRetry.IsZero() {
		t.Errorf("open circuit status: %+v", st)
	}
	_, err = d.CallTool(t.Context(), "sup", "pid", nil)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "is unhealthy since") || !strings.Contains(err.Error(), "kiln retries at") {
		t.Fatalf("call with the circuit open: %v", err)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	waitFor(t, d, "recovered", func(s Status) bool { return s.State == StateHealthy })
}

func TestBusyBackendAndCancellation(t *testing.T) {
	d := supervised(t, "serve", func(c *config.Config) {
		c.Backends[0].MaxConcurrent, c.Backends[0].QueueWait = 1, 50*time.Millisecond
	})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var waitErr error
	wg.Go(func() { _, waitErr = d.CallTool(ctx, "sup", "wait", nil) })
	waitFor(t, d, "busy", func(s Status) bool { return s.InFlight == 1 })
	_, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if CodeOf(err) != CodeBusy || !strings.Contains(err.Error(), "backends.sup.max_concurrent") {
		t.Fatalf("call over the limit: %v", err)
	}
	cancel()
	wg.Wait()
	if CodeOf(waitErr) != CodeCanceled {
		t.Fatalf("canceled call: %v", waitErr)
	}
	if _, err := d.CallTool(t.Context(), "sup", "pid", nil); err != nil {
		t.Fatalf("slot not released after cancel: %v", err)
	}
	rec := d.Recent(3)
	if len(rec) != 3 || rec[0].Outcome != "ok" || rec[1].Outcome != string(CodeCanceled) || rec[2].Outcome != string(CodeBusy) {
		t.Errorf("recent calls = %+v", rec)
	}
}

// TestRaisingMaxConcurrentReleasesQueuedCalls: a call queued behind the
// old limit goes ahead as soon as a reload raises it, not after the call
// holding the only slot ends.
func TestRaisingMaxConcurrentReleasesQueuedCalls(t *testing.T) {
	d := supervised(t, "serve", func(c *config.Config) {
		c.Backends[0].MaxConcurrent, c.Backends[0].QueueWait = 1, time.Minute
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { d.CallTool(ctx, "sup", "wait", nil) })
	waitFor(t, d, "one call in flight", func(s Status) bool { return s.InFlight == 1 })
	queued := make(chan error, 1)
	go func() {
		_, err := d.CallTool(t.Context(), "sup", "pid", nil)
		queued <- err
	}()
	waitFor(t, d, "one call queued", func(s Status) bool { return s.Queued == 1 })
	d.mu.Lock()
	next := *d.cfg
	next.Backends = append([]config.Backend(nil), d.cfg.Backends...)
	d.mu.Unlock()
	next.Backends[0].MaxConcurrent = 2
	if restarted := d.Reload(&next); len(restarted) != 0 {
		t.Fatalf("limits-only reload restarted %v", restarted)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued call after the limit was raised: %v", err)
	}
	if st := d.Status()[0]; st.InFlight != 1 || st.Queued != 0 {
		t.Errorf("after the queued call: in flight %d, queued %d; want the wait call still in flight and none queued", st.InFlight, st.Queued)
	}
	cancel()
	wg.Wait()
}

func TestProgressReachesObserver(t *testing.T) {
	d := supervised(t, "serve", nil)
	var mu sync.Mutex
	var got []string
	ctx := WithObserver(t.Context(), &Observer{Progress: func(p float64, total *float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%g/%g %s", p, *total, msg))
	}})
	if _, err := d.CallTool(ctx, "sup", "progress", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "1/3 step 1,2/3 step 2,3/3 step 3" {
		t.Errorf("progress = %q", got)
	}
}

func TestReloadKeepsOrRestartsSessions(t *testing.T) {
	d := supervised(t, "serve", nil)
	pidOf := func() string {
		res, err := d.CallTool(t.Context(), "sup", "pid", nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.TextContent()
	}
	before := pidOf()
	d.mu.Lock()
	next := *d.cfg
	next.Backends = append([]config.Backend(nil), d.cfg.Backends...)
	d.mu.Unlock()
	next.Backends[0].Timeout, next.Backends[0].MaxConcurrent = 3*time.Second, 4
	if restarted := d.Reload(&next); len(restarted) != 0 {
		t.Fatalf("limits-only reload restarted %v", restarted)
	}
	if st := d.Status()[0]; st.Timeout != 3*time.Second || st.MaxConcurrent != 4 {
		t.Errorf("limits not applied: %+v", st)
	}
	if pidOf() != before {
		t.Error("limits-only reload replaced the process")
	}
	env := map[string]string{"KILN_TEST_SUPERVISED": "serve", "EXTRA": "1"}
	next.Backends[0].Env = env
	if restarted := d.Reload(&next); len(restarted) != 1 {
		t.Fatalf("env change restarted %v", restarted)
	}
	waitFor(t, d, "reconnected", func(s Status) bool { return s.State == StateHealthy })
	if pidOf() == before {
		t.Error("env change kept the old process")
	}
}

func TestNothingStartsAfterClose(t *testing.T) {
	d := supervised(t, "serve", nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	err := d.AddBackend(config.Backend{Name: "late", Transport: config.TransportStdio, Command: exe, Enabled: true, MaxConcurrent: 1,
		Env: map[string]string{"KILN_TEST_SUPERVISED": "serve"}})
	if err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("AddBackend after Close: %v", err)
	}
}

func TestRemovedNameIsFreeAtOnce(t *testing.T) {
	d := supervised(t, "serve", nil)
	if !d.RemoveBackend("sup") {
		t.Fatal("sup not removed")
	}
	exe, _ := os.Executable()
	if err := d.AddBackend(config.Backend{Name: "sup", Transport: config.TransportStdio, Command: exe, Enabled: true, MaxConcurrent: 1,
		Env: map[string]string{"KILN_TEST_SUPERVISED": "serve"}}); err != nil {
		t.Fatalf("re-adding a removed name: %v", err)
	}
}

func TestListingUntilTheRefreshAfterConnectEnds(t *testing.T) {
	// Connected is not yet served: /readyz holds traffic back while the
	// refresh after a connect lists the backend's tools, resources and
	// prompts (a backend not compiled in has no tools before it ends).
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	refreshes := make(chan string, 1)
	d := supervisedWith(t, "serve", nil, Options{OnConnect: func(name string) {
		refreshes <- name
		<-release
	}})
	if name := <-refreshes; name != "sup" {
		t.Fatalf("OnConnect got %q, want sup", name)
	}
	if st := d.Status()[0]; st.State != StateHealthy || !st.Listing {
		t.Fatalf("status while the refresh after connect runs = %s, listing %v; want healthy and listing", st.State, st.Listing)
	}
	open()
	waitFor(t, d, "done listing once the refresh ended", func(st Status) bool { return st.State == StateHealthy && !st.Listing })

	// A refresh of an earlier connect that ends late leaves a newer
	// connect's flag alone.
	s := d.slots["sup"]
	d.mu.Lock()
	old := s.listGen
	s.listGen++
	s.listing = true
	d.mu.Unlock()
	s.listed(old)
	if !d.Status()[0].Listing {
		t.Error("a late refresh of an earlier connect cleared the newer connect's listing")
	}
	s.listed(old + 1)
	if d.Status()[0].Listing {
		t.Error("the refresh of the current connect did not clear listing")
	}
}

func TestFirstCallToAToolNotYetListedWaitsForTheBackend(t *testing.T) {
	// A backend not compiled in has no tools until it connects: the first
	// call waits for the connection and the refresh instead of failing as
	// unknown.
	d := supervisedStarted(t, "slow", nil)
	d.reg.Replace(&manifest.Manifest{Version: 1, Backend: "sup"})
	refreshed := 0
	d.opts.Refresh = func(ctx context.Context, name string) error {
		refreshed++
		tools, err := d.Tools(ctx, name)
		if err != nil {
			return err
		}
		d.reg.Replace(&manifest.Manifest{Version: 1, Backend: name, Tools: tools})
		return nil
	}
	res, err := d.CallTool(t.Context(), "sup", "pid", nil)
	if err != nil {
		t.Fatalf("first call to a tool listed only once the backend connects: %v", err)
	}
	if _, err := strconv.Atoi(res.TextContent()); err != nil || refreshed != 1 {
		t.Errorf("answer %q after %d refreshes, want the pid after 1", res.TextContent(), refreshed)
	}
	// Once connected, an unknown tool is reported at once, without a refresh.
	if _, err := d.CallTool(t.Context(), "sup", "nope", nil); CodeOf(err) != CodeNotFound || refreshed != 1 {
		t.Errorf("unknown tool on a connected backend: %v (refreshes %d)", err, refreshed)
	}
}

// sampler answers sampling requests as the client session it names.
type sampler struct{ id string }

func (s sampler) ClientRequest(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != "sampling/createMessage" {
		return nil, fmt.Errorf("unexpected %s", method)
	}
	return json.RawMessage(`{"role":"assistant","model":"m","content":{"type":"text","text":"sampled by ` + s.id + `"}}`), nil
}

func (s sampler) SessionID() string { return s.id }

// A backend that asks its client something while it renders a prompt
// (not only during a tool call) has the question routed to the client
// that asked for the prompt, as it would be talking to it directly.
func TestPromptQuestionReachesItsCaller(t *testing.T) {
	d := supervised(t, "serve", nil)
	ctx := WithObserver(t.Context(), &Observer{Client: sampler{"ada"}})
	raw, err := d.GetPrompt(ctx, "sup", "sampled", nil)
	if err != nil {
		t.Fatalf("prompts/get of a prompt that samples: %v", err)
	}
	if !strings.Contains(string(raw), "sampled by ada") {
		t.Errorf("prompts/get = %s, want ada's sampled text", raw)
	}
}

// A resource read that outlives the backend's timeout fails with an
// error that names the timeout and what to do, as a tool call's does.
func TestSlowReadSaysWhatToDo(t *testing.T) {
	d := supervised(t, "serve", func(cfg *config.Config) { cfg.Backends[0].Timeout = 300 * time.Millisecond })
	_, err := d.ReadResource(t.Context(), "sup", "sup://hang")
	var de *Error
	if !errors.As(err, &de) || de.Code != CodeTimeout || !strings.Contains(err.Error(), "backends.sup.timeout") {
		t.Errorf("read past the timeout: %v; want a timeout error naming backends.sup.timeout", err)
	}
}

// Another client session's resources/read in flight on the shared session
// does not take a tool call's question from it: the backend's sampling
// during ada's call still reaches ada while bob's read hangs.
func TestOtherSessionsReadLeavesTheCallsQuestion(t *testing.T) {
	d := supervised(t, "serve", nil)
	rctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = d.ReadResource(WithObserver(rctx, &Observer{Client: sampler{"bob"}}), "sup", "sup://hang")
	}()
	// The read is in flight before the call starts.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		d.obs.mu.Lock()
		n := len(d.obs.byBackend["sup"])
		d.obs.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's read never went out")
		}
	}
	r, err := d.CallTool(WithObserver(t.Context(), &Observer{Client: sampler{"ada"}}), "sup", "sample", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.TextContent() != "sampled by ada" {
		t.Errorf("ada's call got %q (isError %v), want ada's own sampling answer", r.TextContent(), r.IsError)
	}
	cancel()
	<-read
}

// TestObserversForgetEndedSessions: the per-backend observer table keeps
// no entry for a key (a backend, or a client session's own session on it)
// once its calls have ended.
func TestObserversForgetEndedSessions(t *testing.T) {
	var o observers
	ctx := WithObserver(t.Context(), &Observer{Client: sampler{"ada"}})
	_, done1 := o.track(ctx, sessionKey("sup", "ada"))
	_, done2 := o.track(ctx, sessionKey("sup", "ada"))
	done1()
	if len(o.byBackend) != 1 {
		t.Fatalf("a call still in flight: table has %d keys, want 1", len(o.byBackend))
	}
	done2()
	if len(o.byBackend) != 0 {
		t.Errorf("every call ended: the table still holds %v", o.byBackend)
	}
}
