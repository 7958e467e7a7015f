package poison

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search/benchdata"
)

// Thresholds the measurement must meet. Every corpus case is a published
// attack shape the rules were written for, so anything under 100% is a
// regression. On real descriptions a finding costs a reviewer a look (or an
// accept_findings entry), and at run time hides an unreviewed tool, so the
// budget is 1% of tools: about 5 of LiveMCPBench's 527 and 25 of
// ToolBench's 2,479.
const (
	minDetection = 1.0
	maxFalsePos  = 0.01
)

// TestCorpus: every poisoned case trips the rule it was written for.
func TestCorpus(t *testing.T) {
	cases := corpus()
	if len(cases) < 25 {
		t.Fatalf("corpus has %d cases, want ≥ 25", len(cases))
	}
	caught := 0
	for _, p := range cases {
		fs := p.run()
		if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Rule == p.want && f.Backend == "suspect" }) {
			t.Errorf("%s: want %s, got [%s]", p.name, p.want, rulesOf(fs))
			continue
		}
		caught++
	}
	rate := float64(caught) / float64(len(cases))
	t.Logf("poisoned corpus: %d/%d detected (%.1f%%)", caught, len(cases), 100*rate)
	if rate < minDetection {
		t.Errorf("detection %.1f%% < %.0f%%", 100*rate, 100*minDetection)
	}
}

// TestFalsePositives runs every check (all texts of every tool, and
// homoglyph collisions across each dataset's tools) over the real tools of
// shared/bench, prints the rate and every false positive, and holds the
// rate under maxFalsePos. Missing data fails under CI (benchdata).
func TestFalsePositives(t *testing.T) {
	var table []string
	for _, set := range benchdata.Sets {
		path, _ := benchdata.Files(t, set)
		tools := readBench(t, path)
		var ms []*manifest.Manifest
		byServer := map[string]*manifest.Manifest{}
		for _, bt := range tools {
			m := byServer[bt.Server]
			if m == nil {
				m = &manifest.Manifest{Backend: bt.Server}
				byServer[bt.Server] = m
				ms = append(ms, m)
			}
			m.Tools = append(m.Tools, manifest.Tool{Name: bt.Name, Title: bt.Title, Description: bt.Description, InputSchema: bt.InputSchema})
		}
		flagged := map[string][]Finding{}
		for _, f := range Check(ms, nil) {
			flagged[f.Backend+"."+f.Subject] = append(flagged[f.Backend+"."+f.Subject], f)
		}
		rate := float64(len(flagged)) / float64(len(tools))
		table = append(table, fmt.Sprintf("%-13s %5d tools  %3d flagged  %.2f%%", set, len(tools), len(flagged), 100*rate))
		for _, id := range sortedKeys(flagged) {
			for _, f := range flagged[id] {
				t.Logf("false positive %s: %s %s %s", set, id, f.Rule, f.Excerpt)
			}
		}
		if rate > maxFalsePos {
			t.Errorf("%s: false-positive rate %.2f%% > %.0f%%", set, 100*rate, 100*maxFalsePos)
		}
	}
	t.Logf("false positives on real tools:\n%s", strings.Join(table, "\n"))
}

type benchTool struct {
	Server, Name, Title, Description string
	InputSchema                      json.RawMessage
}

// readBench reads a tools.jsonl; benchdata.Files has already failed or
// skipped the test when it is missing.
func readBench(t *testing.T, path string) []benchTool {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []benchTool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var bt benchTool
		if err := json.Unmarshal(sc.Bytes(), &bt); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, bt)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
