//go:build e2e

package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHopTable is `make bench-hop` (issue 29): the hop's cost stated
// against the floor of any hop measured in the same run, since on these
// shared 2-core machines the floor itself moves with the load. Each of
// KILN_HOP_ROUNDS rounds (default 20) calls every stdio path
// KILN_HOP_CALLS times (default 1,000, sequential) in an order shuffled per
// round, then every HTTP path at 1, 16 and 64 sessions
// (KILN_HOP_HTTP_CALLS calls per session, default 100), also shuffled. It
// prints per path the median over rounds of each round's p50 and p99, and
// the ratio of the path's added latency to the byte relay's, both taken
// as medians of the per-round differences from the direct call. Run it
// with -benchtime 1x: one iteration is the whole table. KILN_HOP_ONLY=stdio
// or http runs one of the two tables; with KILN_PROFILE_DIR every kiln
// writes its profile there, named after its path.
func BenchmarkHopTable(b *testing.B) {
	rounds := envInt(b, "KILN_HOP_ROUNDS", 20)
	calls := envInt(b, "KILN_HOP_CALLS", 1000)
	httpCalls := envInt(b, "KILN_HOP_HTTP_CALLS", 100)
	only := os.Getenv("KILN_HOP_ONLY")
	if only != "" && only != "stdio" && only != "http" {
		b.Fatalf("KILN_HOP_ONLY=%q: want stdio, http or nothing (both)", only)
	}
	var stdio, web []hopPath
	if only != "http" {
		stdio = hopStdioPaths(b)
	}
	if only != "stdio" {
		web = hopHTTPPaths(b)
	}
	for range b.N {
		st := make([][]roundStat, len(stdio))
		hs := make([][]roundStat, len(web))
		for range rounds {
			for _, j := range rand.Perm(len(stdio)) {
				st[j] = append(st[j], timeSequential(b, stdio[j], calls))
			}
			for _, j := range rand.Perm(len(web)) {
				hs[j] = append(hs[j], timeConcurrent(b, web[j], httpCalls))
			}
		}
		if stdio != nil {
			printStdioTable(stdio, st, rounds, calls)
		}
		if web != nil {
			printHTTPTable(web, hs, rounds, httpCalls)
		}
	}
}

// hopPath is one way to make the echo call; a concurrent path has one
// call per session.
type hopPath struct {
	name  string
	calls []func(context.Context) error
}

// roundStat is one round of one path: its p50 and p99 and, for the
// concurrent paths, its calls per second.
type roundStat struct {
	p50, p99 time.Duration
	rate     float64
}

func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// hopStdioPaths starts the stdio paths, a process each (a kiln per path:
// one kiln serving two paths would find itself warm from the other's
// call), and warms each up.
func hopStdioPaths(b *testing.B) []hopPath {
	everything, cfg := echoFleet(b)
	direct := writeDirectConfig(b, cfg)
	relay := relayBin(b)
	xdg, err := os.MkdirTemp("", "khop")
	if err != nil {
		b.Fatal(err)
	}
	daemonEnv := "XDG_RUNTIME_DIR=" + xdg
	b.Cleanup(func() {
		_ = runKiln(b, daemonEnv, "connect", "--config", cfg, "--stop")
		os.RemoveAll(xdg)
	})
	echo := map[string]any{"message": "hi"}
	tool := func(cs *sdk.ClientSession, name string, args map[string]any) func(context.Context) error {
		return func(ctx context.Context) error { return callOK(ctx, cs, name, args) }
	}
	chain := func(code string) map[string]any { return map[string]any{"code": code} }
	open := func(name, env string, argv ...string) *sdk.ClientSession {
		cs, _ := sdkStdio(b, env, argv...)
		return cs
	}
	kiln := kilnBin(b)
	paths := []hopPath{
		{"direct", []func(context.Context) error{tool(open("direct", "", everything...), "echo", echo)}},
		{"byte-relay", []func(context.Context) error{tool(open("relay", "", append([]string{relay, "--"}, everything...)...), "echo", echo)}},
		{"decode-relay", []func(context.Context) error{tool(open("decode", "", append([]string{relay, "--decode", "--"}, everything...)...), "echo", echo)}},
		{"kiln-tier1", []func(context.Context) error{tool(open("t1", profileEnvNamed("hop-tier1"), kiln, "serve", "--config", cfg), "call_tool_chain", chain(echoTier1))}},
		{"kiln-tier2", []func(context.Context) error{tool(open("t2", profileEnvNamed("hop-tier2"), kiln, "serve", "--config", cfg), "call_tool_chain", chain(echoTier2))}},
		{"kiln-direct", []func(context.Context) error{tool(open("dm", profileEnvNamed("hop-direct"), kiln, "serve", "--config", direct), "everything__echo", echo)}},
		{"kiln-connect", []func(context.Context) error{tool(open("cn", daemonEnv, kiln, "connect", "--config", cfg), "call_tool_chain", chain(echoTier1))}},
	}
	for _, p := range paths {
		warm(b, p)
	}
	return paths
}

// writeDirectConfig writes beside cfg a copy that exposes the backends'
// tools directly (everything__echo).
func writeDirectConfig(b *testing.B, cfg string) string {
	b.Helper()
	raw, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "kiln-direct.yaml")
	text := strings.Replace(string(raw), "gateway:\n", "gateway:\n  expose: direct\n", 1)
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return out
}

func runKiln(b *testing.B, env string, args ...string) error {
	cmd := exec.Command(kilnBin(b), args...)
	cmd.Dir = repoRoot(b)
	cmd.Env = append(os.Environ(), env)
	return cmd.Run()
}

// hopHTTPPaths starts server-everything on streamable HTTP, a kiln in
// direct mode on HTTP fronting it over HTTP, and one fronting
// server-everything over stdio, and opens 64 sessions to each; the paths
// are each of those at 1, 16 and 64 sessions, and, as the floor under the
// last, the same client calling server-everything over stdio itself with
// 1, 16 and 64 calls at once.
func hopHTTPPaths(b *testing.B) []hopPath {
	everything, _ := echoFleet(b)
	backendURL := startEverythingHTTP(b)
	viaHTTP := writeHTTPConfig(b, fmt.Sprintf("    transport: http\n    url: %s\n", backendURL))
	viaStdio := writeHTTPConfig(b, fmt.Sprintf("    transport: stdio\n    command: node\n    args: [%s, stdio]\n", everything[1]))
	targets := []struct {
		name, url, tool string
	}{
		{"backend-http", backendURL, "echo"},
		{"kiln-http>http", startHTTPEnv(b, profileEnvNamed("hop-http-http"), "--config", viaHTTP) + "/mcp", "everything__echo"},
		{"kiln-http>stdio", startHTTPEnv(b, profileEnvNamed("hop-http-stdio"), "--config", viaStdio) + "/mcp", "everything__echo"},
	}
	echo := map[string]any{"message": "hi"}
	// One keep-alive connection per session: the default transport keeps
	// two idle connections per host and would redial the others per call.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var paths []hopPath
	for _, tg := range targets {
		var calls []func(context.Context) error
		for range 64 {
			c := sdk.NewClient(&sdk.Implementation{Name: "kiln-bench", Version: "1"}, nil)
			cs, err := c.Connect(b.Context(), &sdk.StreamableClientTransport{Endpoint: tg.url, HTTPClient: client}, nil)
			if err != nil {
				b.Fatalf("%s: connect: %v", tg.name, err)
			}
			b.Cleanup(func() { cs.Close() })
			calls = append(calls, func(ctx context.Context) error { return callOK(ctx, cs, tg.tool, echo) })
		}
		for _, n := range []int{1, 16, 64} {
			p := hopPath{fmt.Sprintf("%s/%d", tg.name, n), calls[:n]}
			warm(b, p)
			paths = append(paths, p)
		}
	}
	// The floor under kiln-http>stdio: the same client calling the
	// stdio backend itself, N calls at once on one session (a stdio
	// server has one), so the table shows what the backend alone
	// serves on this machine beside what kiln serves in front of it.
	cs, _ := sdkStdio(b, "", everything...)
	call := func(ctx context.Context) error { return callOK(ctx, cs, "echo", echo) }
	for _, n := range []int{1, 16, 64} {
		p := hopPath{fmt.Sprintf("backend-stdio/%d", n), slices.Repeat([]func(context.Context) error{call}, n)}
		warm(b, p)
		paths = append(paths, p)
	}
	return paths
}

// writeHTTPConfig is a kiln.yaml exposing one backend, everything, whose
// transport lines are backend, directly.
func writeHTTPConfig(b *testing.B, backend string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "kiln.yaml")
	text := fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  log_level: warn\n  expose: direct\nbackends:\n  everything:\n%s", b.TempDir(), backend)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// warm calls each of p's sessions warmupCalls times, retrying for a
// minute while kiln's backend still starts (backends connect in the
// background).
func warm(b *testing.B, p hopPath) {
	b.Helper()
	ctx := b.Context()
	for _, call := range p.calls {
		deadline := time.Now().Add(time.Minute)
		for i := 0; i < warmupCalls; {
			if err := call(ctx); err != nil {
				if time.Now().After(deadline) {
					b.Fatalf("%s: %v", p.name, err)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			i++
		}
	}
}

// timeSequential makes n calls one after another on p's only session.
func timeSequential(b *testing.B, p hopPath, n int) roundStat {
	b.Helper()
	ctx := b.Context()
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := p.calls[0](ctx); err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
		lat = append(lat, time.Since(start))
	}
	return stat(lat, 0)
}

// timeConcurrent makes n sequential calls on each of p's sessions, the
// sessions at once, and reports the calls per second of the whole.
func timeConcurrent(b *testing.B, p hopPath, n int) roundStat {
	b.Helper()
	ctx := b.Context()
	lats := make([][]time.Duration, len(p.calls))
	errs := make([]error, len(p.calls))
	var wg sync.WaitGroup
	start := time.Now()
	for i, call := range p.calls {
		wg.Go(func() {
			for range n {
				t := time.Now()
				if err := call(ctx); err != nil {
					errs[i] = err
					return
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
	}
	all := slices.Concat(lats...)
	return stat(all, float64(len(all))/wall.Seconds())
}

func stat(lat []time.Duration, rate float64) roundStat {
	slices.Sort(lat)
	return roundStat{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], rate: rate}
}

// medianOf is the median over rounds of f of each round.
func medianOf(rs []roundStat, f func(roundStat) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func µs(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// printStdioTable prints the stdio table. A path's added latency is the
// median over rounds of (path − direct) in the same round; its ratio is
// that over the byte relay's added latency.
func printStdioTable(paths []hopPath, st [][]roundStat, rounds, calls int) {
	added := func(j int, f func(roundStat) time.Duration) float64 {
		d := make([]roundStat, len(st[j]))
		for i := range d {
			d[i] = roundStat{p50: f(st[j][i]) - f(st[0][i])}
		}
		return medianOf(d, func(r roundStat) float64 { return µs(r.p50) })
	}
	p50 := func(r roundStat) time.Duration { return r.p50 }
	p99 := func(r roundStat) time.Duration { return r.p99 }
	relay50, relay99 := added(1, p50), added(1, p99)
	fmt.Printf("\nbench-hop stdio: %d rounds x %d sequential echo calls per path, medians over rounds (µs)\n", rounds, calls)
	fmt.Printf("%-14s %8s %8s %9s %9s %8s %8s\n", "path", "p50", "p99", "+p50", "+p99", "x50", "x99")
	for j, p := range paths {
		a50, a99 := added(j, p50), added(j, p99)
		fmt.Printf("%-14s %8.0f %8.0f %9.0f %9.0f %8.2f %8.2f\n", p.name,
			medianOf(st[j], func(r roundStat) float64 { return µs(r.p50) }),
			medianOf(st[j], func(r roundStat) float64 { return µs(r.p99) }),
			a50, a99, a50/relay50, a99/relay99)
	}
	fmt.Println("+p50/+p99: median of the rounds' (path − direct); x50/x99: that over the byte relay's")
}

// printHTTPTable prints calls/s, p50 and p99 per HTTP path, and kiln's
// added p50 at one session over the backend's own.
func printHTTPTable(paths []hopPath, hs [][]roundStat, rounds, calls int) {
	fmt.Printf("\nbench-hop HTTP: %d rounds x %d sequential echo calls per session, medians over rounds\n", rounds, calls)
	fmt.Printf("%-20s %10s %10s %10s\n", "path/sessions", "calls/s", "p50 µs", "p99 µs")
	for j, p := range paths {
		fmt.Printf("%-20s %10.0f %10.0f %10.0f\n", p.name,
			medianOf(hs[j], func(r roundStat) float64 { return r.rate }),
			medianOf(hs[j], func(r roundStat) float64 { return µs(r.p50) }),
			medianOf(hs[j], func(r roundStat) float64 { return µs(r.p99) }))
	}
	at := func(name string) []roundStat {
		for j, p := range paths {
			if p.name == name {
				return hs[j]
			}
		}
		panic("no HTTP path " + name)
	}
	// kiln's added p50 over the HTTP backend's own, both at one session.
	backend, kiln := at("backend-http/1"), at("kiln-http>http/1")
	d := make([]roundStat, len(backend))
	for i := range d {
		d[i] = roundStat{p50: kiln[i].p50 - backend[i].p50}
	}
	added := medianOf(d, func(r roundStat) float64 { return µs(r.p50) })
	fmt.Printf("kiln-http>http/1 added p50 %.0f µs = %.2fx the backend's own p50 (median of per-round differences)\n",
		added, added/medianOf(backend, func(r roundStat) float64 { return µs(r.p50) }))
	// kiln in front of the stdio backend against the backend alone, the
	// same N calls at once.
	for _, n := range []int{1, 16, 64} {
		k, floor := at(fmt.Sprintf("kiln-http>stdio/%d", n)), at(fmt.Sprintf("backend-stdio/%d", n))
		r := make([]roundStat, len(k))
		for i := range r {
			r[i] = roundStat{rate: k[i].rate / floor[i].rate}
		}
		fmt.Printf("kiln-http>stdio/%d serves %.2fx the calls/s of backend-stdio/%d (median of per-round ratios)\n",
			n, medianOf(r, func(r roundStat) float64 { return r.rate }), n)
	}
}
