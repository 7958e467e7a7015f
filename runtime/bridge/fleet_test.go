package bridge

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/google/go-cmp/cmp"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// loadFleet reads the LiveMCPBench tool list (70 servers, 527 tools) from
// the shared bench data next to the repository.
func loadFleet(t testing.TB) []Backend {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "bench", "livemcpbench", "tools.jsonl")
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("fleet data not found at %s", p)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx := map[string]int{}
	var out []Backend
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			Server, Name, Description string
			InputSchema               json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		i, ok := idx[row.Server]
		if !ok {
			i = len(out)
			idx[row.Server] = i
			out = append(out, Backend{Name: row.Server})
		}
		out[i].Tools = append(out[i].Tools, manifest.Tool{Name: row.Name, Description: row.Description, InputSchema: row.InputSchema})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPreambleFleet runs the preamble of the whole bench fleet and calls
// every tool once by identifier and once by original names.
func TestPreambleFleet(t *testing.T) {
	backends := loadFleet(t)
	rt, calls := runtimeWith(t, backends)
	table := Lookup(backends)
	var script strings.Builder
	var want [][3]string
	script.WriteString("(async () => {\n")
	for _, b := range backends {
		obj, _ := table.BackendIdent(b.Name)
		for _, tl := range b.Tools {
			tool, _ := table.ToolIdent(b.Name, tl.Name)
			script.WriteString("await " + obj + "." + tool + "({});\n")
			script.WriteString("await globalThis[" + jsString(b.Name) + "][" + jsString(tl.Name) + "]({});\n")
			want = append(want, [3]string{b.Name, tl.Name, "{}"}, [3]string{b.Name, tl.Name, "{}"})
			if got, gotTool, ok := table.Resolve(obj, tool); !ok || got != b.Name || gotTool != tl.Name {
				t.Errorf("Resolve(%q, %q) = %q, %q, %v", obj, tool, got, gotTool, ok)
			}
		}
	}
	script.WriteString("})();")
	run(t, rt, script.String())
	if len(want) != 2*527 {
		t.Errorf("fleet has %d tools, want 527", len(want)/2)
	}
	if diff := cmp.Diff(want, *calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	if !run(t, rt, `Object.keys(__interfaces).length === 70 && __getToolInterface("bing-cn-mcp.bing_search").name === "bing_search"`).ToBoolean() {
		t.Error("__interfaces does not describe the fleet")
	}
}

// BenchmarkPreambleFleet measures what the sandbox pays per script for the
// 527-tool fleet: a fresh runtime running the precompiled preamble.
func BenchmarkPreambleFleet(b *testing.B) {
	prog, err := goja.Compile("preamble.js", string(Preamble(loadFleet(b))), false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rt := goja.New()
		_ = rt.Set("__kiln_call", func(goja.FunctionCall) goja.Value { return goja.Undefined() })
		if _, err := rt.RunProgram(prog); err != nil {
			b.Fatal(err)
		}
	}
}
