package server

import (
	"encoding/json"
	"log/slog"
	"testing"
)

// BenchmarkFastCall is one tier-1 call_tool_chain as the stdio read loop
// serves it, in process: the line scanned, the request's protocol info,
// the handler, the chain's JSON tier, validation, the output pipeline and
// the response written. The backend is fakeCaller, so what it measures is
// kiln's own work on a call; allocs/op is the figure to hold down (every
// allocation is paid again in GC on a long-running gateway).
func BenchmarkFastCall(b *testing.B) {
	s := newStdioTestServer(b, slog.New(slog.DiscardHandler))
	for _, c := range []struct{ name, params string }{
		{"modern", `{"name":"call_tool_chain",` + chainCall + `,` + modernMeta + `}`},
		{"legacy", `{"name":"call_tool_chain",` + chainCall + `}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + c.params + `}`)
			id := json.RawMessage(`7`)
			ctx := withEarlyAnswer(b.Context(), &earlyAnswer{write: func([]byte) {}})
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := s.fastCall(ctx, id, line); !ok {
					b.Fatal("not served by fastCall")
				}
			}
		})
	}
}
