package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/audit"
	"github.com/kilnmcp/kiln/runtime/chain"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/policy"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// rules50 is a policy list of 50 rules where the call's identity is
// matched by the last: the most a call pays for its decision, every rule's
// match read (kind, subject glob, a claim) before one allows.
func rules50(tb testing.TB) []config.Policy {
	var b strings.Builder
	b.WriteString("version: 1\npolicies:\n")
	for i := range 49 {
		fmt.Fprintf(&b, "  - {match: {kind: jwt, subject: \"team%d-*\", claims: {groups: [g%d]}}, allow: [\"b%d.*\"], deny: [\"*.delete_*\"], annotations: {destructiveHint: true}}\n", i, i, i)
	}
	b.WriteString("  - {match: {kind: jwt, claims: {groups: [ci]}}, allow: [\"everything.*\"], rate: 1000000, burst: 1000000}\n")
	cfg, err := config.LoadBytes([]byte(b.String()), "kiln.yaml", tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return cfg.Policies
}

// BenchmarkFastCallPolicy is BenchmarkFastCall's legacy call side by side
// with no policies, with 50 rules (and a rate limit) deciding it, and with
// those rules and the audit log writing a line per call (to a real file,
// batched and fsynced as in production), for the budget of 5 µs p50
// added per call.
func BenchmarkFastCallPolicy(b *testing.B) {
	for _, c := range []struct {
		name  string
		rules []config.Policy
		audit bool
	}{{"none", nil, false}, {"rules50", rules50(b), false}, {"rules50+audit", rules50(b), true}} {
		b.Run(c.name, func(b *testing.B) {
			s := newStdioTestServer(b, slog.New(slog.DiscardHandler))
			reg := s.opts.Registry
			g := policy.NewGuard(fakeCaller{}, policy.Compile(c.rules), func(backend, tool string) (policy.Tool, bool) {
				t, err := reg.Resolve(backend + "." + tool)
				if err != nil {
					return policy.Tool{}, false
				}
				return policy.Tool{Backend: t.Backend, Name: t.Name, Annotations: t.Annotations}, true
			}, nil, nil)
			var caller toolcall.Caller = g
			if c.audit {
				l, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl")})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { l.Close() })
				caller = l.Caller(g, func(context.Context) (string, string, string) { return "s1", "", "1" })
			}
			s = withGuard(b, s, caller, g, reg)
			line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"call_tool_chain",` + chainCall + `}}`)
			id := json.RawMessage(`7`)
			ctx := withEarlyAnswer(b.Context(), &earlyAnswer{write: func([]byte) {}})
			ctx = toolcall.WithIdentity(ctx, toolcall.Identity{Kind: "jwt", Subject: "alice", Claims: map[string]any{"groups": []any{"ops", "ci"}}})
			b.ReportAllocs()
			for b.Loop() {
				resp, ok := s.fastCall(ctx, id, line)
				if !ok || !strings.Contains(string(resp), "get-sum got") {
					b.Fatalf("not served: %s", resp)
				}
			}
		})
	}
}

// withGuard rebuilds s with caller (g, or a wrapper of it) as its chain's
// Caller and g as its listings' policy.
func withGuard(tb testing.TB, s *Server, caller toolcall.Caller, g *policy.Guard, reg *registry.Registry) *Server {
	tb.Helper()
	o := s.opts
	o.Chain = chain.New(chain.Options{Caller: caller, Registry: reg})
	o.Policy = g
	return New(o)
}
