package backend

import (
	"context"
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// BenchmarkRawCall is one tools/call on the raw path against a backend
// that answers at once (scriptedServer), so what it measures is kiln's
// side: cpu-µs/op is this process's CPU time (user + system, all
// threads: the caller, the stdout reader, mcp-go's reader) per call.
func BenchmarkRawCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cfg := &config.Backend{Name: "test", Transport: config.TransportStdio, Command: exe, Cwd: b.TempDir(), Enabled: true,
		Env: map[string]string{"KILN_TEST_SERVER": "scripted"}}
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Second)
	c, err := dialOnce(ctx, cfg, Options{}, true)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if !c.rawPath() {
		b.Fatalf("a %s stdio session does not take the raw path", c.protocol)
	}
	args := json.RawMessage(`{"message":"hi"}`)
	for range 100 {
		if _, err := c.CallTool(b.Context(), "chatty", args, CallOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := selfCPU()
	b.ResetTimer()
	for range b.N {
		if _, err := c.CallTool(b.Context(), "chatty", args, CallOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
