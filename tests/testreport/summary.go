package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// stage is one line of stages.tsv: a make target and its wall time.
type stage struct {
	name       string
	start, end int64
	status     int
	timed      bool
	tally      *tally // nil for a stage that runs no go test
}

func summaryCmd(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: testreport summary DIR")
		return 2
	}
	stages, err := load(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	return report(w, stages, getenv("CI") == "true", strings.Fields(getenv("KILN_ALLOW_SKIP")))
}

// load reads dir's stages.tsv and each stage's event file; an event file
// without a stages.tsv line (a stage run on its own, `make race`) is
// reported without a wall time.
func load(dir string) ([]*stage, error) {
	var stages []*stage
	b, err := os.ReadFile(filepath.Join(dir, "stages.tsv"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		s := &stage{name: f[0], timed: true}
		var errs [3]error
		if len(f) == 4 {
			s.start, errs[0] = strconv.ParseInt(f[1], 10, 64)
			s.end, errs[1] = strconv.ParseInt(f[2], 10, 64)
			s.status, errs[2] = strconv.Atoi(f[3])
		}
		if len(f) != 4 || errors.Join(errs[:]...) != nil {
			return nil, fmt.Errorf("%s/stages.tsv:%d: want \"name start end status\", got %q", dir, i+1, line)
		}
		stages = append(stages, s)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		i := slices.IndexFunc(stages, func(s *stage) bool { return s.name == name })
		if i < 0 {
			stages = append(stages, &stage{name: name})
			i = len(stages) - 1
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		stages[i].tally, err = count(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return stages, nil
}

// report prints the table, the skips and the failures, and returns the
// run's exit status.
func report(w io.Writer, stages []*stage, ci bool, allowed []string) int {
	var first, last int64
	for _, s := range stages {
		if s.timed && (first == 0 || s.start < first) {
			first = s.start
		}
		last = max(last, s.end)
	}
	fmt.Fprintln(w, "== test run")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tstarted\twall\tresult\tpackages\ttests\tsubtests\tskipped\tfailed")
	status := 0
	var skips []string
	var notAllowed int
	var fails []string
	for _, s := range stages {
		start, wall := "-", "-"
		if s.timed {
			start, wall = fmt.Sprintf("+%ds", s.start-first), fmt.Sprintf("%ds", s.end-s.start)
		}
		result := "ok"
		if s.status != 0 || (s.tally != nil && len(s.tally.fails) > 0) {
			result, status = "FAIL", 1
		}
		cells := []string{s.name, start, wall, result, "", "", "", "", ""}
		if t := s.tally; t != nil {
			cells[4], cells[5], cells[6] = strconv.Itoa(len(t.packages)), strconv.Itoa(t.tests), strconv.Itoa(t.subtests)
			cells[7], cells[8] = strconv.Itoa(len(t.skips)), strconv.Itoa(len(t.fails))
			for _, k := range t.skips {
				mark := ""
				if ci && !skipAllowed(allowed, k.testKey) {
					mark = " [CI: counts as a failure]"
					notAllowed++
				}
				skips = append(skips, fmt.Sprintf("  %s  %s %s: %s%s", s.name, k.pkg, k.test, k.reason, mark))
			}
			for _, f := range t.fails {
				fails = append(fails, fmt.Sprintf("  %s  %s", s.name, f))
			}
		}
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(cells, "\t"), "\t"))
	}
	tw.Flush()
	if first != 0 {
		fmt.Fprintf(w, "wall time %ds from the first stage's start to the last one's end (stages overlap)\n", last-first)
	}
	fmt.Fprintf(w, "skipped: %d\n", len(skips))
	for _, s := range skips {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintf(w, "failed: %d\n", len(fails))
	for _, f := range fails {
		fmt.Fprintln(w, f)
	}
	if notAllowed > 0 {
		fmt.Fprintf(w, "CI=true: %d skipped tests fail the run; a CI run must run everything (.ci/run installs the real parts; KILN_ALLOW_SKIP names skips the machine itself forces)\n", notAllowed)
		status = 1
	}
	if status != 0 {
		fmt.Fprintln(w, "FAIL")
	} else {
		fmt.Fprintln(w, "PASS")
	}
	return status
}

// skipAllowed reports whether $KILN_ALLOW_SKIP names k, as TestName or
// package.TestName.
func skipAllowed(allowed []string, k testKey) bool {
	return slices.Contains(allowed, k.test) || slices.Contains(allowed, k.pkg+"."+k.test)
}
