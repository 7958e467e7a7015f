//go:build e2e

package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEchoHop measures what kiln adds to one tool call: the same
// go-sdk client calls server-everything's echo over stdio directly, and
// through `kiln serve` as a tier-1 and a tier-2 call_tool_chain, one after
// another in one run. Each sub-benchmark reports p50 and p90 in µs; the
// difference of the p50s is kiln's overhead. With KILN_PROFILE_DIR=DIR,
// each kiln writes CPU and allocation profiles there when it exits
// (`go tool pprof bin/kiln DIR/kiln-tier1.cpu.pprof`).
//
// The relay-copy and relay-decode runs put tests/linerelay in kiln's
// place: a process that only copies the bytes, and one that decodes and
// re-encodes each line. Their p50 minus direct's is what any process on
// the path costs on this machine, the floor under kiln's figure.
func BenchmarkEchoHop(b *testing.B) {
	everything, cfg := echoFleet(b)
	b.Run("direct", func(b *testing.B) {
		cs, cmd := sdkStdio(b, "", everything...)
		benchCalls(b, cmd, func(ctx context.Context) error {
			return callOK(ctx, cs, "echo", map[string]any{"message": "hi"})
		})
	})
	relay := relayBin(b)
	for _, mode := range []string{"copy", "decode"} {
		b.Run("relay-"+mode, func(b *testing.B) {
			argv := []string{relay, "--"}
			if mode == "decode" {
				argv = []string{relay, "--decode", "--"}
			}
			cs, cmd := sdkStdio(b, "", append(argv, everything...)...)
			benchCalls(b, cmd, func(ctx context.Context) error {
				return callOK(ctx, cs, "echo", map[string]any{"message": "hi"})
			})
		})
	}
	kiln := []string{kilnBin(b), "serve", "--config", cfg}
	b.Run("kiln-tier1", func(b *testing.B) {
		cs, cmd := sdkStdio(b, profileEnv(b), kiln...)
		benchCalls(b, cmd, func(ctx context.Context) error {
			return callOK(ctx, cs, "call_tool_chain", map[string]any{"code": echoTier1})
		})
	})
	b.Run("kiln-tier2", func(b *testing.B) {
		cs, cmd := sdkStdio(b, profileEnv(b), kiln...)
		benchCalls(b, cmd, func(ctx context.Context) error {
			return callOK(ctx, cs, "call_tool_chain", map[string]any{"code": echoTier2})
		})
	})
	b.Run("kiln-meta", func(b *testing.B) {
		cs, cmd := sdkStdio(b, profileEnv(b), kiln...)
		benchCalls(b, cmd, func(ctx context.Context) error {
			return callOK(ctx, cs, "list_tools_meta", map[string]any{"page_size": 1})
		})
	})
}

// echoFleet returns the command line of server-everything over stdio and
// a kiln.yaml serving it alone, for the hop benchmarks.
func echoFleet(b *testing.B) (everything []string, cfg string) {
	b.Helper()
	mods := filepath.Join(repoRoot(b), "tests/node_modules/@modelcontextprotocol")
	everything = []string{"node", filepath.Join(mods, "server-everything/dist/index.js"), "stdio"}
	cfg = filepath.Join(b.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `version: 1
gateway:
  state_dir: %s
  log_level: warn
backends:
  everything:
    transport: stdio
    command: node
    args: [%s, stdio]
`, b.TempDir(), everything[1]), 0o644); err != nil {
		b.Fatal(err)
	}
	return everything, cfg
}

// The echo call at tier 1 (JSON) and tier 2 (one TypeScript call).
const (
	echoTier1 = `{"tool":"everything.echo","arguments":{"message":"hi"}}`
	echoTier2 = `await everything.echo({message: "hi"})`
)

// relayBin builds tests/linerelay into the benchmark's temporary folder.
func relayBin(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "linerelay")
	cmd := exec.Command("go", "build", "-o", path, "./tests/linerelay")
	cmd.Dir = repoRoot(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build linerelay: %v\n%s", err, out)
	}
	return path
}

// BenchmarkEchoHopPaired times the same calls as BenchmarkEchoHop, but
// interleaved: each round calls echo directly, through a byte-copying
// relay, and through kiln at tier 1 and tier 2 (a kiln each), in an order
// that rotates every round, so all four see the same machine from one
// moment to the next. Each process waits idle while the others are
// called, as a gateway does between an agent's steps. Besides each path's
// p50 it reports the median of the per-round differences from the direct
// call ("added"), which a machine whose load drifts between sub-benchmarks
// does not skew the way it skews a difference of two separately measured
// p50s.
func BenchmarkEchoHopPaired(b *testing.B) {
	everything, cfg := echoFleet(b)
	direct, _ := sdkStdio(b, "", everything...)
	relay, _ := sdkStdio(b, "", append([]string{relayBin(b), "--"}, everything...)...)
	// A kiln per tier: calls to one process would find it warm from the
	// call before.
	kiln1, _ := sdkStdio(b, profileEnvNamed("paired-tier1"), kilnBin(b), "serve", "--config", cfg)
	kiln2, _ := sdkStdio(b, profileEnvNamed("paired-tier2"), kilnBin(b), "serve", "--config", cfg)
	echo := map[string]any{"message": "hi"}
	paths := []struct {
		name string
		call func(context.Context) error
	}{
		{"direct", func(ctx context.Context) error { return callOK(ctx, direct, "echo", echo) }},
		{"relay", func(ctx context.Context) error { return callOK(ctx, relay, "echo", echo) }},
		{"tier1", func(ctx context.Context) error {
			return callOK(ctx, kiln1, "call_tool_chain", map[string]any{"code": echoTier1})
		}},
		{"tier2", func(ctx context.Context) error {
			return callOK(ctx, kiln2, "call_tool_chain", map[string]any{"code": echoTier2})
		}},
	}
	ctx := b.Context()
	for range warmupCalls {
		for _, p := range paths {
			if err := p.call(ctx); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
		}
	}
	lat := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for i := range b.N {
		for k := range paths {
			j := (i + k) % len(paths)
			start := time.Now()
			if err := paths[j].call(ctx); err != nil {
				b.Fatalf("%s: %v", paths[j].name, err)
			}
			lat[j] = append(lat[j], time.Since(start))
		}
	}
	b.StopTimer()
	for j, p := range paths {
		b.ReportMetric(median(lat[j]), p.name+"-p50-µs")
		if j == 0 {
			continue
		}
		added := make([]time.Duration, len(lat[j]))
		for i := range added {
			added[i] = lat[j][i] - lat[0][i]
		}
		b.ReportMetric(median(added), p.name+"-added-p50-µs")
	}
}

// BenchmarkEchoHopAB compares two builds of kiln side by side: with
// KILN_BIN_B naming a second build's bin folder (the first is KILN_BIN's,
// or this checkout's), it calls echo directly and through each kiln as a
// tier-1 call, in bursts of five sequential calls per path (the first of
// each burst untimed: it finds the process idle), rotating the order every
// round. It reports each path's p50 and each kiln's added latency, the
// median of its calls' differences from the direct calls in the same
// round: a load that drifts during the run moves A and B alike. This is
// how the hot-path changes were measured; a wrapper script in a folder of
// its own (exec kiln with other variables) compares settings of one build.
// Without KILN_BIN_B, B is A's build again: that A/A run measures the
// method's own noise, the difference an A/B result must exceed to mean
// anything.
func BenchmarkEchoHopAB(b *testing.B) {
	dirB := os.Getenv("KILN_BIN_B")
	if dirB == "" {
		dirB = filepath.Dir(kilnBin(b))
	}
	everything, cfg := echoFleet(b)
	direct, _ := sdkStdio(b, "", everything...)
	kilnA, _ := sdkStdio(b, "", kilnBin(b), "serve", "--config", cfg)
	kilnB, _ := sdkStdio(b, "", filepath.Join(dirB, "kiln"), "serve", "--config", cfg)
	echo := map[string]any{"message": "hi"}
	tier1 := func(cs *sdk.ClientSession) func(context.Context) error {
		return func(ctx context.Context) error {
			return callOK(ctx, cs, "call_tool_chain", map[string]any{"code": echoTier1})
		}
	}
	paths := []struct {
		name string
		call func(context.Context) error
	}{
		{"direct", func(ctx context.Context) error { return callOK(ctx, direct, "echo", echo) }},
		{"A", tier1(kilnA)},
		{"B", tier1(kilnB)},
	}
	ctx := b.Context()
	for range warmupCalls {
		for _, p := range paths {
			if err := p.call(ctx); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
		}
	}
	const burst = 5
	lat := make([][]time.Duration, len(paths))
	b.ResetTimer()
	for i := range b.N {
		for k := range paths {
			j := (i + k) % len(paths)
			for n := range burst {
				start := time.Now()
				if err := paths[j].call(ctx); err != nil {
					b.Fatalf("%s: %v", paths[j].name, err)
				}
				if n > 0 {
					lat[j] = append(lat[j], time.Since(start))
				}
			}
		}
	}
	b.StopTimer()
	for j, p := range paths {
		if j > 0 {
			added := make([]time.Duration, len(lat[j]))
			for i := range added {
				added[i] = lat[j][i] - lat[0][i]
			}
			b.ReportMetric(median(added), p.name+"-added-p50-µs")
		}
	}
	for j, p := range paths {
		b.ReportMetric(median(lat[j]), p.name+"-p50-µs")
	}
}

// median of d in µs; d is sorted in place.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds())
}

// profileEnv asks kiln for profiles named after the sub-benchmark when
// KILN_PROFILE_DIR is set.
func profileEnv(b *testing.B) string { return profileEnvNamed(filepath.Base(b.Name())) }

// profileEnvNamed is profileEnv for profiles named name.
func profileEnvNamed(name string) string {
	dir := os.Getenv("KILN_PROFILE_DIR")
	if dir == "" {
		return ""
	}
	name = filepath.Join(dir, name)
	knobs := "cpuprofile=" + name + ".cpu.pprof"
	if os.Getenv("KILN_PROFILE_MEM") != "" {
		knobs = "memprofile=" + name + ".mem.pprof"
	}
	if os.Getenv("KILN_PROFILE_TRACE") != "" {
		knobs = "trace=" + name + ".trace"
	}
	return "KILNDEBUG=" + knobs
}

func sdkStdio(b *testing.B, env string, argv ...string) (*sdk.ClientSession, *exec.Cmd) {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = repoRoot(b)
	cmd.Env = os.Environ()
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "kiln-bench", Version: "1"}, nil)
	cs, err := c.Connect(b.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func callOK(ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: isError: %+v", name, res.Content)
	}
	return nil
}

const warmupCalls = 50

// procCPU is the user + system time of process pid, all its threads, from
// /proc/PID/stat (in clock ticks, 10 ms on Linux: time enough calls).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which ends at the last ')': state is
	// the first, utime the 12th and stime the 13th.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %d fields after the name, want 13 or more", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick
}

// benchCalls warms up (which also waits for the backend to connect), then
// times b.N sequential calls and reports their p50 and p90.
//
// It also reports the CPU time (user + system, all threads) the server
// process, kiln or server-everything, spent per timed call: unlike the
// latencies it hardly moves when other work shares the machine, and it
// counts the server's process alone (a kiln's backend and sandbox workers
// are processes of their own). The direct run's figure is what
// server-everything spends; a kiln run's is what kiln adds.
func benchCalls(b *testing.B, server *exec.Cmd, call func(context.Context) error) {
	ctx := b.Context()
	for range warmupCalls {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	cpu0 := procCPU(b, server.Process.Pid)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64((procCPU(b, server.Process.Pid)-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}

// BenchmarkColdStart times exec of `kiln serve` (the compiled fleet, its
// backends starting in the background) to the answer of its first
// tools/list, over raw stdio: what a client waits for before it can plan.
func BenchmarkColdStart(b *testing.B) {
	cfg := peerConfig(b, peerOptions{})
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		start := time.Now()
		cmd := exec.Command(kilnBin(b), "serve", "--config", cfg)
		cmd.Dir = repoRoot(b)
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for _, l := range lines {
			fmt.Fprintln(in, l)
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":2,`) {
				break
			}
		}
		lat = append(lat, time.Since(start))
		in.Close()
		_ = cmd.Wait()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}
