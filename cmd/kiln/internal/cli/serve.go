package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kilnmcp/kiln"
	"github.com/kilnmcp/kiln/generated"
	genbridge "github.com/kilnmcp/kiln/generated/bridge"
	"github.com/kilnmcp/kiln/generated/searchindex"
	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/bridge"
	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/daemon"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/heapfloor"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/oauth"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/sandbox"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/server"
	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/usecount"
	"github.com/kilnmcp/kiln/runtime/version"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kiln serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default: $KILN_CONFIG, else ./kiln.yaml, else the copy compiled into kiln)")
	httpAddr := fs.String("http", "", "serve streamable HTTP at http://ADDR/mcp and SSE at /sse instead of stdio (e.g. 127.0.0.1:8080)")
	asDaemon := fs.Bool("daemon", false, "serve kiln connect clients on a private unix socket instead of stdio (kiln connect starts it)")
	idle := fs.Duration("idle", daemon.DefaultIdle, "with --daemon: exit after this long with no client connected")
	profileName := fs.String("profile", "", "over stdio: serve only profiles.NAME of the config (over HTTP every profile is at /mcp/NAME)")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if *httpAddr != "" || *asDaemon {
		// The heap floor pays where calls keep the processors busy (many
		// clients over HTTP or the daemon's socket). Serving one stdio
		// client kiln idles between calls and collects in that idle time,
		// where a small heap stays in the caches: there the floor cost a
		// tier-1 call ~45 µs of CPU and ~50 µs of latency (BenchmarkEchoHop,
		// BenchmarkEchoHopAB with $GOGC=100 as the second build).
		heapfloor.Start()
	}
	// SIGTERM ends sig; the gateway runs under ctx, which ends only after
	// the drain (ops.drainOn), so calls in flight keep their backends.
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	knobs, err := parseDebug(os.Getenv("KILNDEBUG"))
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	stopProfiles, err := startProfiles(knobs)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer stopProfiles()

	cfg, err := loadServeConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	if *profileName != "" && (*httpAddr != "" || *asDaemon) {
		fmt.Fprintf(stderr, "kiln: --profile is for stdio; over HTTP every profile is served at /mcp/NAME and /sse/NAME\n")
		return exitUsage
	}
	if _, ok := cfg.Profile(*profileName); *profileName != "" && !ok {
		_, err := stdioProfile(cfg, nil, *profileName)
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	scrubber := newScrubber(cfg)
	logOut := scrubber.Writer(stderr)
	defer logOut.Flush()
	log := newLogger(logOut, cfg.Gateway.LogLevel)
	if err := os.MkdirAll(cfg.Gateway.StateDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "kiln: gateway.state_dir: %v\n", err)
		return exitFail
	}

	// The HTTP front door and the daemon socket are opened before any
	// backend starts, so a refused configuration (or a daemon already
	// serving) fails at once and spawns nothing.
	var dmn *daemonDoor
	if *asDaemon {
		if dmn, err = openDaemonDoor(cfg, *httpAddr, *idle); err != nil {
			fmt.Fprintf(stderr, "kiln: %v\n", err)
			return exitUsage
		}
		defer dmn.ln.Close()
	}
	var front *frontDoor
	if *httpAddr != "" {
		if front, err = openFrontDoor(*httpAddr, cfg, log); err != nil {
			fmt.Fprintf(stderr, "kiln: %v\n", err)
			return exitUsage
		}
	}

	reg := registry.New()
	if err := generated.RegisterAll(reg); err != nil {
		fmt.Fprintf(stderr, "kiln: load compiled backends: %v\n", err)
		return exitFail
	}
	// What the compiled preamble binds: it was emitted from these backends.
	compiledBindings := bridgeBindings(reg)
	for _, b := range cfg.Backends {
		// Workspace tools are kiln's own: served from source, nothing to compile.
		if _, ok := reg.Backend(b.Name); !ok && b.Enabled && b.Transport != config.TransportWorkspace {
			log.Warn("backend is declared in the config but not compiled into this kiln; its live tools are served once it connects; run `make generate && make build` to compile them in",
				"backend", b.Name, "config", cfg.Path)
		}
	}
	counter := &pipeline.Counter{}
	op, err := startOps(ctx, cfg, reg, counter, log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	defer op.close()
	go op.drainOn(sig, ctx, stopRun)
	replica, _ := os.Hostname() // a pod's name in Kubernetes
	feed := newConsoleFeed(cfg, *httpAddr != "")
	auditLog, err := openAudit(cfg, op.tel, feed, replica, log)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	// Closed before op.close shuts telemetry down, so the last batch
	// reaches the file, the log exporter and the console.
	defer auditLog.Close()
	if err := server.CheckExposure(cfg, reg); err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitUsage
	}
	index, err := search.LoadString(searchindex.Data)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: compiled search index: %v\n", err)
		return exitFail
	}

	searcher, closeSearcher, err := openSearcher(cfg, index, log)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer closeSearcher()

	st, err := openState(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer st.close()

	uses, saveEvery, err := st.usage(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer saveUsage(uses, log)
	go saveUsageEvery(ctx, uses, log, saveEvery)

	var cat *catalog.Catalog
	// The server is built last; backends may ask for roots and the catalog
	// may announce changes before it exists.
	var srvRef atomic.Pointer[server.Server]
	var profRef atomic.Pointer[map[string]*profileView]
	refresh := func(name string) {
		// connect_timeout applies on reload: read the config as it is now.
		ctx, cancel := context.WithTimeout(ctx, op.cfg.Load().Gateway.ConnectTimeout)
		defer cancel()
		if err := cat.Refresh(ctx, name); err != nil {
			log.Warn("could not refresh a backend's tools", "backend", name, "err", err)
		}
	}
	hub := newPassthroughHub(log, func() time.Duration { return op.cfg.Load().Gateway.ConnectTimeout })
	tokens := oauth.NewManager(oauth.ManagerOptions{Store: st.tokens(cfg), OnSecret: learnTokens(scrubber), Logger: log})
	defer tokens.Close() // runs after the dispatcher closes its backends
	disp := dispatch.New(reg, cfg, dispatch.Options{Version: version.String(), Logger: log, OnCall: uses.Record,
		HTTPClient: tokens.HTTPClient,
		OnConnect: func(name string) {
			refresh(name)
			hub.refresh(ctx, name)
		},
		Refresh: func(ctx context.Context, name string) error { return cat.Refresh(ctx, name) },
		Self:    front.addrs(),
		OnListChanged: func(name, kind string) {
			if kind == "tools" {
				refresh(name)
			} else {
				hub.refresh(ctx, name, kind)
			}
		},
		OnResourceUpdated: hub.updated,
		OnLog:             hub.logged,
		SoleClient: func() dispatch.ClientSession {
			if srv := srvRef.Load(); srv != nil {
				return srv.SoleClient()
			}
			return nil
		},
		OnEvent: func(backend, event string) {
			op.tel.BackendEvent(backend, event)
			feed.backendEvent(backend, event)
		},
	})
	op.disp.Store(disp)
	// The catalog exists before the server it notifies; changes before the
	// server does are picked up by its first listing.
	cat = catalog.New(catalog.Options{Registry: reg, Backends: disp, Config: cfg, Search: searcher, Logger: log, Store: st.registrations(cfg),
		OnEvent: func(kind, backend, detail string) {
			auditLog.Add(audit.Record{Event: kind, Backend: backend, Detail: detail})
		},
		OnAdmit: func(b config.Backend) { scrubber.Learn(backendSecrets(b)...) },
		OnChange: func() {
			if srv := srvRef.Load(); srv != nil {
				srv.SyncTools()
			}
			if views := profRef.Load(); views != nil {
				syncProfiles(*views)
			}
		}})
	// Backends outlive the drain until the front door has shut down
	// (disp.Close, deferred): a request that reached kiln just before it
	// stopped listening must still find its backend running, or a rolling
	// restart loses calls ("backend is stopped").
	disp.Start(context.WithoutCancel(ctx))
	defer disp.Close()
	// Restored registrations are listed before the first request; their
	// backends connect in the background.
	cat.Restore(ctx)
	cat.Follow(ctx)
	// The policy decides every call of every tier and every exposed tool
	// (the sandbox's calls come back through caller too); refusals never
	// reach the backends' telemetry, which counts backend calls.
	guard := policy.NewGuard(op.tel.Caller(disp), policy.Compile(cfg.Policies), resolveTool(reg), st.limitCounter(), log)
	if cfg.FromFile {
		go watchConfig(ctx, cfg, time.Second, log, func(next *config.Config) {
			guard.Store(policy.Compile(next.Policies))
			scrubber.Learn(secretValues(next)...)
			restarted := disp.Reload(next)
			cat.SetConfig(next)
			op.cfg.Store(next)
			log.Info("config reloaded", "config", next.Path, "restarted", strings.Join(restarted, ","))
			auditLog.Add(audit.Record{Event: audit.EventReload, Detail: "config " + next.Path + " reloaded; backends restarted: " + cmp.Or(strings.Join(restarted, ","), "none")})
		})
	}

	// Outside the guard, so a refusal is audited like any other call.
	caller := auditLog.Caller(guard, auditScope)
	sb, err := startSandbox(cfg, caller, reg, compiledBindings, log)
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	defer sb.Close()
	go func() {
		// The first worker starts in the background; one that cannot
		// start leaves kiln serving discovery, not ready, and logged (the
		// pool logs the worker's error).
		if err := sb.Ready(ctx); err != nil && ctx.Err() == nil {
			op.health.Broken("sandbox: " + err.Error() + "; call_tool_chain programs fail until this is fixed (see kiln's log)")
		}
	}()
	opts := server.Options{
		Name:         cfg.Gateway.Name,
		Version:      version.String(),
		Config:       cfg,
		Registry:     reg,
		Status:       disp,
		Catalog:      cat,
		Boost:        uses.Boost,
		Counter:      counter,
		Registrar:    cat,
		Scrubber:     scrubber,
		Exposed:      generated.ExposedNames,
		Logger:       log,
		RootsChanged: func(ctx context.Context, sid string) { disp.RootsChanged(ctx, sid) },
		SessionEnded: disp.EndSession,
		SharedState:  st.problem(),
		Audit:        auditLog.Problem,
		Telemetry:    op.tel,
		Policy:       guard,
		Chain: chain.New(chain.Options{
			Caller:         caller,
			Registry:       reg,
			Catalog:        cat,
			Sandbox:        op.tel.Sandbox(sb),
			DefaultTimeout: sb.Limits().Timeout,
			MaxTimeout:     sb.Limits().MaxTimeout,
			Output:         outputOptions(cfg),
			Counter:        counter,
			Scrub:          scrubber.Result,
			Policy:         guard,
			Logger:         log,
			OnTier: func(ctx context.Context, t chain.Tier) (context.Context, func()) {
				return op.tel.EnterTier(ctx, int(t))
			},
		}),
		Passthrough: disp,
	}
	srv := server.New(opts)
	views := newProfileViews(cfg, opts)
	srvRef.Store(srv)
	profRef.Store(&views)
	srv.SyncTools() // changes that landed while the server was built
	syncProfiles(views)
	hub.attach(ctx, srv, disp)
	op.health.Ready()
	if dmn != nil {
		return dmn.serve(ctx, srv, log, stderr)
	}
	if *httpAddr == "" {
		in, out, release := rawStdio(stdin, stdout)
		defer release()
		oneClientProcs()
		// Every call of this session runs for the user running kiln.
		local := toolcall.WithIdentity(ctx, daemon.LocalUser(os.Getuid()))
		if *profileName != "" {
			v, _ := stdioProfile(cfg, views, *profileName) // checked above
			srv, local = v.srv, policy.WithProfile(local, v.p)
			hub.attach(ctx, srv, disp) // the backends' notifications go to the profile's client
		}
		if err := srv.ServeStdio(local, in, out); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "kiln: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	cons := feed.startConsole(cfg, srv, caller, guard, resolveTool(reg), scrubber, replica, log)
	if cons != nil {
		// Streams end when the server starts shutting down, so an open
		// console tab does not hold the drain for its whole timeout.
		front.onShutdown = cons.Close
		go cons.WatchBackends(ctx, 500*time.Millisecond)
	}
	front.open = withConsole(cons, op.frontRoutes)
	return front.serve(ctx, profileRoutes(srv.Handler(), views), stderr)
}

// loadServeConfig picks the config: an explicit path, $KILN_CONFIG,
// ./kiln.yaml, then the copy compiled into the binary.
func loadServeConfig(path string) (*config.Config, error) {
	if path == "" {
		path = os.Getenv("KILN_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("kiln.yaml"); err == nil {
			path = "kiln.yaml"
		}
	}
	if path != "" {
		return config.Load(path)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return config.LoadBytes(kiln.DefaultConfig, "embedded kiln.default.yaml", wd)
}

// frontDoor is the HTTP listener and its guard.
type frontDoor struct {
	ln    net.Listener
	guard *httpauth.Guard
	cfg   config.HTTP
	// open, when set, adds the routes served beside the guarded MCP
	// handler (probes, metrics).
	open func(g *httpauth.Guard, guarded http.Handler) http.Handler
	// onShutdown, when set, runs as the HTTP server starts shutting down.
	onShutdown func()
}

func openFrontDoor(addr string, cfg *config.Config, log *slog.Logger) (*frontDoor, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	guard, err := httpauth.New(cfg.Gateway.HTTP, httpauth.Options{Addr: ln.Addr().String(), Logger: log})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	auth := "off (loopback only)"
	if guard.AuthRequired() {
		auth = "bearer token required"
	}
	log.Info("http front door", "auth", auth)
	return &frontDoor{ln: guard.Listener(ln), guard: guard, cfg: cfg.Gateway.HTTP}, nil
}

// addrs lists the addresses kiln listens on, which backends registered at
// run time must never reach; none without --http.
func (f *frontDoor) addrs() []netip.AddrPort {
	if f == nil {
		return nil
	}
	if a, ok := f.ln.Addr().(*net.TCPAddr); ok {
		return []netip.AddrPort{a.AddrPort()}
	}
	return nil
}

func (f *frontDoor) serve(ctx context.Context, h http.Handler, stderr io.Writer) int {
	ln := f.ln
	h = f.guard.Wrap(h)
	if f.open != nil {
		h = f.open(f.guard, h)
	}
	// The guard bounds reading a body (read_timeout) and clears the
	// deadline once it is in, so streams and long calls are not cut;
	// http.Server.ReadTimeout would cut them. Headers get at most 10s.
	hs := &http.Server{Handler: h,
		ReadHeaderTimeout: min(10*time.Second, cmp.Or(f.cfg.ReadTimeout, httpauth.DefaultReadTimeout)),
		IdleTimeout:       max(f.cfg.ReadTimeout, time.Minute),
	}
	if f.onShutdown != nil {
		hs.RegisterOnShutdown(f.onShutdown)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go sweepSessions(sweepCtx, f.guard, cmp.Or(f.cfg.SessionIdle, httpauth.DefaultSessionIdle))
	// Tests and scripts read this line to learn the port when ADDR ends in :0.
	fmt.Fprintf(stderr, "kiln: serving MCP at http://%s/mcp (legacy SSE at /sse)\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
	}
	return exitOK
}

// sweepSessions frees idle sessions even when nobody opens new ones.
func sweepSessions(ctx context.Context, g *httpauth.Guard, idle time.Duration) {
	t := time.NewTicker(max(idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Sweep()
		}
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func outputOptions(cfg *config.Config) pipeline.Options {
	out := cfg.Gateway.Output
	o := pipeline.DefaultOptions()
	o.MaxOutputSize = cfg.Gateway.MaxOutputSize
	o.IntentFilter, o.AutoChunkJSON, o.SmartTruncation, o.SizeFooter = out.IntentFilter, out.AutoChunkJSON, out.SmartTruncation, out.SizeFooter
	// Zero thresholds keep the pipeline's defaults.
	o.IntentThreshold = cmp.Or(out.IntentThreshold, o.IntentThreshold)
	o.ChunkThreshold = cmp.Or(out.ChunkThreshold, o.ChunkThreshold)
	o.TruncateAt = cmp.Or(out.TruncateAt, o.TruncateAt)
	return o
}

func saveUsage(u *usecount.Counts, log *slog.Logger) {
	if err := u.Save(); err != nil {
		log.Warn("could not save search usage counts", "err", err)
	}
}

// saveUsageEvery bounds what a crash loses to one interval of counts.
func saveUsageEvery(ctx context.Context, u *usecount.Counts, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			saveUsage(u, log)
		}
	}
}

// startSandbox starts the worker processes that run tier-3 programs: a
// hidden subcommand of this same binary, so one binary ships everything.
// Programs never fall back to running inside kiln, which would drop the
// kernel's memory limit without anyone noticing: a worker that cannot
// start fails the runs, is logged and makes /readyz not ready.
func startSandbox(cfg *config.Config, caller toolcall.Caller, reg *registry.Registry, bindings []bridge.Binding, log *slog.Logger) (*sandbox.Pool, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find kiln's own executable to start sandbox workers: %w", err)
	}
	lim := cfg.Gateway.Sandbox
	sb, err := sandbox.NewPool(sandbox.Options{Preamble: genbridge.Preamble, Bindings: bindings, Caller: caller, Logger: log, Backends: reg.BackendNames,
		Limits: sandbox.Limits{
			Timeout: lim.Timeout, MaxTimeout: lim.MaxTimeout, Memory: lim.MemoryBytes, MaxCalls: lim.MaxCalls,
			MaxConcurrent: lim.MaxConcurrent, QueueWait: lim.QueueWait,
		}}, sandbox.WorkerOptions{Command: func() *exec.Cmd {
		cmd := exec.Command(self, workerCommand)
		// A worker needs nothing from kiln's environment (tokens included)
		// but the loader's path: a SEMANTIC=1 binary links libllama_go.so
		// and cannot start without it.
		cmd.Env = []string{}
		if p, ok := os.LookupEnv("LD_LIBRARY_PATH"); ok {
			cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+p)
		}
		return cmd
	}})
	if err != nil {
		return nil, fmt.Errorf("%w (call_tool_chain programs run in %s %s processes; check that the binary can be executed)", err, self, workerCommand)
	}
	return sb, nil
}

// bridgeBindings lists what a preamble built from the registry's backends
// binds, as the bridge table names them.
func bridgeBindings(reg *registry.Registry) []bridge.Binding {
	var backends []bridge.Backend
	for _, b := range reg.Backends() {
		backends = append(backends, bridge.Backend{Name: b.Name(), Tools: b.Manifest.Tools})
	}
	return bridge.Lookup(backends).Bindings()
}

// resolveTool finds the tool a Caller is asked for, for the policy's
// annotations conditions.
func resolveTool(reg *registry.Registry) policy.Resolver {
	return func(backend, tool string) (policy.Tool, bool) {
		t, err := reg.Resolve(backend + "." + tool)
		if err != nil {
			return policy.Tool{}, false
		}
		return policy.Tool{Backend: t.Backend, Name: t.Name, Annotations: t.Annotations}, true
	}
}
