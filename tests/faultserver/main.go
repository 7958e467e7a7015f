package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// config is the parsed set of knobs; doc.go lists them.
type config struct {
	httpAddr      string
	stateDir      string
	startDelay    time.Duration
	exitAtStart   int
	exitOnStart   bool
	crashAfter    int
	stdoutGarbage bool
	stateless     bool
	cutStream     string
	passthrough   bool
	hugeTemplate  bool
	legacy        bool
	// rugPull is a kiln manifest to impersonate, rugPullTool the tool it
	// poisons (rugpull.go).
	rugPull, rugPullTool string
}

// legacyVersions are the revisions FAULT_LEGACY negotiates: those of the
// initialize handshake, where resources/subscribe is a request of its own.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// parseConfig reads the FAULT_* variables through getenv and lets flags of
// the same meaning override them.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("faultserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.httpAddr, "http", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio")
	fs.StringVar(&cfg.stateDir, "state-dir", getenv("FAULT_STATE_DIR"), "directory for pid and events.log")
	delay := fs.String("start-delay", getenv("FAULT_START_DELAY"), "sleep this long before serving")
	exit := fs.String("exit-at-start", getenv("FAULT_EXIT_AT_START"), "exit with this code before serving")
	crash := fs.String("crash-after", getenv("FAULT_CRASH_AFTER"), "exit(3) on the N-th tools/call")
	fs.StringVar(&cfg.rugPull, "rug-pull", getenv("FAULT_RUG_PULL"), "serve this kiln manifest's tools, then poison one and add exfil after the first call")
	fs.StringVar(&cfg.rugPullTool, "rug-pull-tool", getenv("FAULT_RUG_PULL_TOOL"), "the tool --rug-pull poisons (default: the manifest's first)")
	fs.StringVar(&cfg.cutStream, "cut-stream", getenv("FAULT_HTTP_CUT_STREAM"), "HTTP only: break the connection of each call of this tool after its first SSE event")
	// Switches read their variable before the flags are defined, so that
	// a bare --stateless can override it like any boolean flag.
	var err error
	if cfg.stdoutGarbage, err = envBool(getenv, "FAULT_STDOUT_GARBAGE"); err != nil {
		return cfg, err
	}
	if cfg.stateless, err = envBool(getenv, "FAULT_HTTP_STATELESS"); err != nil {
		return cfg, err
	}
	if cfg.passthrough, err = envBool(getenv, "FAULT_PASSTHROUGH"); err != nil {
		return cfg, err
	}
	if cfg.legacy, err = envBool(getenv, "FAULT_LEGACY"); err != nil {
		return cfg, err
	}
	if cfg.hugeTemplate, err = envBool(getenv, "FAULT_HUGE_TEMPLATE"); err != nil {
		return cfg, err
	}
	fs.BoolVar(&cfg.passthrough, "passthrough", cfg.passthrough, "serve a prompt and resources that fail on cue (passthrough.go)")
	fs.BoolVar(&cfg.legacy, "legacy", cfg.legacy, "negotiate no revision after 2025-11-25")
	fs.BoolVar(&cfg.hugeTemplate, "huge-template", cfg.hugeTemplate, "list a resource template with 1,002 variables in one expression (passthrough.go)")
	fs.BoolVar(&cfg.stdoutGarbage, "stdout-garbage", cfg.stdoutGarbage, "write non-JSON lines to stdout (stdio only)")
	fs.BoolVar(&cfg.stateless, "stateless", cfg.stateless, "serve HTTP without sessions, which protocol 2026-07-28 needs")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: all settings are flags or FAULT_* variables", fs.Arg(0))
	}
	if *delay != "" {
		if cfg.startDelay, err = time.ParseDuration(*delay); err != nil || cfg.startDelay < 0 {
			return cfg, fmt.Errorf("FAULT_START_DELAY %q: want a non-negative Go duration such as 10s", *delay)
		}
	}
	if *exit != "" {
		if cfg.exitAtStart, err = strconv.Atoi(*exit); err != nil || cfg.exitAtStart < 0 || cfg.exitAtStart > 255 {
			return cfg, fmt.Errorf("FAULT_EXIT_AT_START %q: want an exit code from 0 to 255", *exit)
		}
		cfg.exitOnStart = true
	}
	if *crash != "" {
		if cfg.crashAfter, err = strconv.Atoi(*crash); err != nil || cfg.crashAfter < 1 {
			return cfg, fmt.Errorf("FAULT_CRASH_AFTER %q: want a call number of 1 or more", *crash)
		}
	}
	return cfg, nil
}

// envBool reads a switch variable; unset or empty means off.
func envBool(getenv func(string) string, name string) (bool, error) {
	v := getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want 1 or 0", name, v)
	}
	return b, nil
}

func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "faultserver: %v\n", err)
		return 2
	}
	events, err := openEvents(cfg.stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "faultserver: %v\n", err)
		return 1
	}
	events.add("start pid=%d", os.Getpid())
	if cfg.startDelay > 0 {
		fmt.Fprintf(stderr, "faultserver: starting (delay %s)\n", cfg.startDelay)
		// No signal handler is installed yet, so SIGTERM still kills a
		// backend that is told to never start.
		time.Sleep(cfg.startDelay)
	}
	if cfg.exitOnStart {
		fmt.Fprintf(stderr, "faultserver: exiting at start as asked (FAULT_EXIT_AT_START=%d)\n", cfg.exitAtStart)
		events.add("exit %d exit-at-start", cfg.exitAtStart)
		return cfg.exitAtStart
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tp := &tap{events: events, stderr: stderr, crashAfter: int64(cfg.crashAfter)}
	if cfg.httpAddr != "" {
		if cfg.stdoutGarbage {
			fmt.Fprintln(stderr, "faultserver: FAULT_STDOUT_GARBAGE ignored: it only applies to stdio")
		}
		err = serveHTTP(ctx, cfg, newServer(cfg, tp, events, stderr, nil), tp, stderr)
	} else {
		err = serveStdio(ctx, cfg, tp, events, stdin, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "faultserver: %v\n", err)
		return 1
	}
	return 0
}

func serveStdio(ctx context.Context, cfg config, tp *tap, events *eventLog, stdin io.Reader, stdout, stderr io.Writer) error {
	out := &lockedWriter{w: stdout}
	var g *garbage
	if cfg.stdoutGarbage {
		g = &garbage{out: out}
		for _, when := range []string{"at start 1", "at start 2", "at start 3"} {
			g.line(when)
		}
	}
	pr, pw := io.Pipe()
	go tp.pump(stdin, pw)
	srv := newServer(cfg, tp, events, stderr, g)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: out})
	// The client closing stdin, or a signal, is how a stdio session ends.
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("serve stdio: %w", err)
}

func serveHTTP(ctx context.Context, cfg config, srv *mcp.Server, tp *tap, stderr io.Writer) error {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(stderr, "faultserver: listening on http://%s/mcp\n", dialable(ln.Addr()))
	// The SDK serves protocol 2026-07-28 over HTTP only without sessions;
	// with them, a 2026 client falls back to 2025-11-25. Without sessions a
	// notifications/cancelled arrives in a POST of its own and cancels
	// nothing, so a cancelled hang would run forever unless the end of its
	// POST cancels it.
	opts := &mcp.StreamableHTTPOptions{
		Stateless:                    cfg.stateless,
		PropagateRequestCancellation: true,
		Logger:                       slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	var h http.Handler
	if cfg.cutStream != "" {
		// Events are stored only when streams are cut: resuming is the
		// point of that fault, and the other tests keep their streams
		// as they were.
		opts.EventStore = mcp.NewMemoryEventStore(nil)
		h = cutStreams(cfg.cutStream, tp.events, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
	} else {
		h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", tp.handler(h))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		// Open SSE streams keep Shutdown waiting, so give it a moment and
		// then close what is left.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}

// dialable turns a wildcard listen address into one a client can dial.
func dialable(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}
