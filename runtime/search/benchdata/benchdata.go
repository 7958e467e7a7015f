// Package benchdata reads the external tool-retrieval datasets (shared/bench
// beside the repository: LiveMCPBench and ToolBench) for tests and
// benchmarks. It is test support: no gateway code imports it.
//
// Where the data is missing a test is skipped, except under CI (CI set),
// where a missing dataset is a broken checkout and fails the test instead
// of letting the measurement silently vanish.
package benchdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Sets are the datasets, in the order Fleet replays them.
var Sets = []string{"livemcpbench", "toolbench"}

// Tool is one line of a dataset's tools.jsonl.
type Tool struct {
	Server, Name, Title, Description string
	InputSchema                      json.RawMessage
}

// Dir returns the folder holding the datasets: $KILN_BENCH_DIR, else
// shared/bench beside the repository.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("KILN_BENCH_DIR")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
		dir = filepath.Join(repo, "..", "shared", "bench")
	}
	if _, err := os.Stat(filepath.Join(dir, Sets[0], "tools.jsonl")); err != nil {
		missing(tb, fmt.Sprintf("bench data not found in %s (set KILN_BENCH_DIR): %v", dir, err))
	}
	return dir
}

// Files returns the tools and queries files of one dataset.
func Files(tb testing.TB, set string) (tools, queries string) {
	tb.Helper()
	dir := filepath.Join(Dir(tb), set)
	return filepath.Join(dir, "tools.jsonl"), filepath.Join(dir, "queries.jsonl")
}

// Fleet replays both datasets' tools, renaming backends (server-r1,
// server-r2, ...) on each pass, until there are n tools.
func Fleet(tb testing.TB, n int) []Tool {
	tb.Helper()
	var src []Tool
	for _, set := range Sets {
		tools, _ := Files(tb, set)
		src = append(src, read(tb, tools)...)
	}
	out := make([]Tool, 0, n)
	for pass := 0; len(out) < n; pass++ {
		for _, t := range src[:min(len(src), n-len(out))] {
			if pass > 0 {
				t.Server = fmt.Sprintf("%s-r%d", t.Server, pass)
			}
			out = append(out, t)
		}
	}
	return out
}

func read(tb testing.TB, path string) []Tool {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		missing(tb, err.Error())
	}
	defer f.Close()
	var out []Tool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var t Tool
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return out
}

func missing(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}
