package workspace

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

func benchFixture(b *testing.B) *Workspace {
	b.Helper()
	root := b.TempDir()
	cfg := config.Workspace{Root: root, MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: b.TempDir(),
		Bash: config.Bash{Timeout: time.Minute, MaxTimeout: time.Minute}}
	w, err := Open(&config.Backend{Name: "bench", Workspace: &cfg}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	if res := w.Call(b.Context(), "Write", json.RawMessage(`{"file_path":"a.txt","content":"`+strings.Repeat("line\\n", 200)+`"}`)); res.IsError {
		b.Fatal(res.TextContent())
	}
	return w
}

func benchCall(b *testing.B, tool, args string) {
	w := benchFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if res := w.Call(b.Context(), tool, json.RawMessage(args)); res.IsError && tool != "Bash" {
			b.Fatal(res.TextContent())
		}
	}
}

// BenchmarkRead is one Read of a 200-line file through the resolver and
// openat2.
func BenchmarkRead(b *testing.B) { benchCall(b, "Read", `{"file_path":"a.txt"}`) }

// BenchmarkBashTrue is the cost of one confined command: re-exec,
// namespaces, Landlock, bash.
func BenchmarkBashTrue(b *testing.B) { benchCall(b, "Bash", `{"command":"true"}`) }

// BenchmarkBashTimeout runs a command past a 200 ms timeout: ns/op minus
// 200 ms is how late the shell-shaped 124 result comes.
func BenchmarkBashTimeout(b *testing.B) {
	benchCall(b, "Bash", `{"command":"sleep 30 & sleep 30","timeout":200}`)
}
