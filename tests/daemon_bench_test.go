//go:build e2e

package tests

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// BenchmarkDaemonHop measures what the relay adds to a call: the same
// go-sdk client makes the same tier-1 call_tool_chain call to
// server-everything's echo through `kiln serve` over stdio, and through
// `kiln connect` relaying to a kiln daemon, one after another in one run.
// Each reports p50 and p90 in µs; the difference of the p50s is the hop.
func BenchmarkDaemonHop(b *testing.B) {
	_, cfg := echoFleet(b)
	xdg, err := os.MkdirTemp("", "kdb")
	if err != nil {
		b.Fatal(err)
	}
	env := "XDG_RUNTIME_DIR=" + xdg
	b.Cleanup(func() {
		stop := exec.Command(kilnBin(b), "connect", "--config", cfg, "--stop")
		stop.Env = append(os.Environ(), env)
		_ = stop.Run()
		os.RemoveAll(xdg)
	})
	for _, mode := range []string{"serve", "connect"} {
		b.Run("kiln-"+mode, func(b *testing.B) {
			cs, srv := sdkStdio(b, env, kilnBin(b), mode, "--config", cfg)
			benchCalls(b, srv, func(ctx context.Context) error {
				return callOK(ctx, cs, "call_tool_chain", map[string]any{"code": echoTier1})
			})
		})
	}
}
