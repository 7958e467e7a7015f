package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/httpauth"
	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/telemetry"
	"github.com/kilnmcp/kiln/runtime/version"
)

// ops is kiln serve's operations side: metrics, traces, health endpoints,
// the gateway.metrics_addr listener and the drain on SIGTERM.
type ops struct {
	tel    *telemetry.Telemetry
	health *telemetry.Health
	cfg    atomic.Pointer[config.Config]
	disp   atomic.Pointer[dispatch.Dispatcher]
	log    *slog.Logger
	hs     *http.Server // the metrics_addr listener; nil when unset
}

// startOps builds telemetry for the compiled backends in reg and, when
// gateway.metrics_addr is set, starts its listener at once, so /healthz
// answers (and /readyz says "starting") while backends connect.
func startOps(ctx context.Context, cfg *config.Config, reg *registry.Registry, counter *pipeline.Counter, log *slog.Logger, stderr io.Writer) (*ops, error) {
	o := &ops{log: log}
	o.cfg.Store(cfg)
	known := map[string][]string{}
	for _, b := range cfg.Backends {
		known[b.Name] = nil
	}
	for _, b := range reg.Backends() {
		for _, t := range b.Manifest.Tools {
			known[b.Name()] = append(known[b.Name()], t.Name)
		}
	}
	m := telemetry.NewMetrics(telemetry.MetricsOptions{Status: o, Counter: counter, Known: known})
	tel, err := telemetry.New(ctx, version.String(), m, log)
	if err != nil {
		return nil, err
	}
	o.tel = tel
	o.health = telemetry.NewHealth(o, o.required)
	tel.Health = o.health
	if tel.Tracing() {
		log.Info("exporting traces over OTLP/HTTP as the OTEL_* environment variables say")
	}
	if addr := cfg.Gateway.MetricsAddr; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("gateway.metrics_addr %s: %w", addr, err)
		}
		if host, _, _ := net.SplitHostPort(addr); !isLoopbackHost(host) {
			log.Warn("gateway.metrics_addr is not a loopback address: /metrics, /healthz and /readyz are served without authentication to anyone who can reach it", "addr", ln.Addr().String())
		}
		mux := http.NewServeMux()
		o.health.Routes(mux, m.Handler())
		o.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		// Tests and scripts read this line to learn the port when the
		// address ends in :0.
		fmt.Fprintf(stderr, "kiln: serving metrics at http://%s/metrics (health at /healthz, /readyz)\n", ln.Addr())
		go o.hs.Serve(ln)
	}
	return o, nil
}

// Status reads the dispatcher once it exists: the metrics and health
// endpoints answer before it does.
func (o *ops) Status() []dispatch.Status {
	if d := o.disp.Load(); d != nil {
		return d.Status()
	}
	return nil
}

// required lists the enabled backends marked required in the current
// config.
func (o *ops) required() []string {
	var out []string
	for _, b := range o.cfg.Load().Backends {
		if b.Required && b.Enabled {
			out = append(out, b.Name)
		}
	}
	return out
}

// frontRoutes serves the probes on the --http listener without the guard
// (probes carry no token and learn nothing but ready or not), and
// /metrics behind it: on the client-facing listener it needs the bearer
// token whenever /mcp does. Use gateway.metrics_addr to scrape without.
func (o *ops) frontRoutes(g *httpauth.Guard, guarded http.Handler) http.Handler {
	mux := http.NewServeMux()
	o.health.Routes(mux, g.Protect(o.tel.Metrics.Handler()))
	mux.Handle("/", guarded)
	return mux
}

// drainOn waits for SIGTERM (sig ends), then turns not-ready, lets calls in
// flight finish for up to gateway.drain_timeout, and stops the gateway
// (stop). It returns at once when the gateway stops for another reason
// (run ends).
func (o *ops) drainOn(sig, run context.Context, stop context.CancelFunc) {
	select {
	case <-run.Done():
		return
	case <-sig.Done():
	}
	o.health.Drain()
	timeout := o.cfg.Load().Gateway.DrainTimeout
	o.log.Info("shutting down: not ready any more; finishing calls in flight", "in_flight", o.health.InFlight(), "drain_timeout", timeout)
	ctx, cancel := context.WithTimeout(run, timeout)
	defer cancel()
	if left := o.health.Wait(ctx); left > 0 {
		o.log.Warn("gateway.drain_timeout passed with calls still running; they are cut off", "in_flight", left)
	}
	stop()
}

// close stops the metrics listener and flushes batched spans.
func (o *ops) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if o.hs != nil {
		o.hs.Shutdown(ctx)
	}
	if err := o.tel.Shutdown(ctx); err != nil {
		o.log.Warn("could not flush traces", "err", err)
	}
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
