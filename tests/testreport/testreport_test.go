package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// events is a go test -json stream, trimmed from a real one: a passing
// package with a skip (its reason logged before --- SKIP), a failing
// subtest, a package without tests and a build failure.
const events = `{"Action":"start","Package":"github.com/kilnmcp/kiln/runtime/state"}
{"Action":"run","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet","Output":"=== RUN   TestFleet\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet","Output":"    redistest.go:44: redis-server is not on PATH;\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet","Output":"        install it\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet","Output":"--- SKIP: TestFleet (0.00s)\n"}
{"Action":"skip","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestFleet"}
{"Action":"run","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestOK"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"github.com/kilnmcp/kiln/runtime/state","Test":"TestOK"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Output":"PASS\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/state","Output":"ok  \tgithub.com/kilnmcp/kiln/runtime/state\t0.1s\n"}
{"Action":"pass","Package":"github.com/kilnmcp/kiln/runtime/state"}
{"Action":"start","Package":"github.com/kilnmcp/kiln/gen"}
{"Action":"run","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/one"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/one","Output":"=== RUN   TestA/one\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/one","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/one","Output":"    --- FAIL: TestA/one (0.00s)\n"}
{"Action":"fail","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/one"}
{"Action":"run","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/two"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/two","Output":"=== RUN   TestA/two\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/two","Output":"    --- PASS: TestA/two (0.00s)\n"}
{"Action":"pass","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA/two"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"github.com/kilnmcp/kiln/gen","Test":"TestA"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Output":"-test.shuffle 42\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Output":"FAIL\n"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/gen","Output":"FAIL\tgithub.com/kilnmcp/kiln/gen\t0.2s\n"}
{"Action":"fail","Package":"github.com/kilnmcp/kiln/gen"}
{"Action":"start","Package":"github.com/kilnmcp/kiln/runtime/version"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/version","Output":"?   \tgithub.com/kilnmcp/kiln/runtime/version\t[no test files]\n"}
{"Action":"skip","Package":"github.com/kilnmcp/kiln/runtime/version"}
{"ImportPath":"github.com/kilnmcp/kiln/runtime/scrub [github.com/kilnmcp/kiln/runtime/scrub.test]","Action":"build-output","Output":"runtime/scrub/x_test.go:3:1: syntax error\n"}
{"ImportPath":"github.com/kilnmcp/kiln/runtime/scrub [github.com/kilnmcp/kiln/runtime/scrub.test]","Action":"build-fail"}
{"Action":"start","Package":"github.com/kilnmcp/kiln/runtime/scrub"}
{"Action":"output","Package":"github.com/kilnmcp/kiln/runtime/scrub","Output":"FAIL\tgithub.com/kilnmcp/kiln/runtime/scrub [build failed]\n"}
{"Action":"fail","Package":"github.com/kilnmcp/kiln/runtime/scrub","FailedBuild":"github.com/kilnmcp/kiln/runtime/scrub [github.com/kilnmcp/kiln/runtime/scrub.test]"}
`

func TestCount(t *testing.T) {
	got, err := count(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	want := &tally{
		packages: map[string]bool{module + "/runtime/state": true, module + "/gen": true, module + "/runtime/scrub": true},
		tests:    2,
		subtests: 2,
		skips:    []skip{{testKey{"runtime/state", "TestFleet"}, "redis-server is not on PATH; install it"}},
		fails:    []string{"gen TestA/one", "runtime/scrub (build failed)"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(tally{}, skip{}, testKey{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestCountUnfinished: a test the timeout panic cut off is named as a
// failure although it never reported one.
func TestCountUnfinished(t *testing.T) {
	got, err := count(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p","Output":"panic: test timed out after 10m0s\n"}
{"Action":"fail","Package":"p"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"p TestHang (did not finish)"}, got.fails); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStream: progress reads like plain go test: one line per package,
// the failing subtest and parent in full, the failed package's own lines
// and the build error; the passing test's output and the skip stay out.
func TestStream(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		var file, out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := stream(strings.NewReader(events), &file, w, quiet); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if file.String() != events {
			t.Errorf("quiet=%v: the event file differs from the stream", quiet)
		}
		var want []string
		if !quiet {
			want = append(want, "ok  \tgithub.com/kilnmcp/kiln/runtime/state\t0.1s")
		}
		want = append(want,
			"=== RUN   TestA/one", "    a_test.go:9: got 1, want 2", "    --- FAIL: TestA/one (0.00s)",
			"=== RUN   TestA", "--- FAIL: TestA (0.00s)",
			"-test.shuffle 42", "FAIL", "FAIL\tgithub.com/kilnmcp/kiln/gen\t0.2s")
		if !quiet {
			want = append(want, "?   \tgithub.com/kilnmcp/kiln/runtime/version\t[no test files]")
		}
		want = append(want, "runtime/scrub/x_test.go:3:1: syntax error", "FAIL\tgithub.com/kilnmcp/kiln/runtime/scrub [build failed]")
		if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
			t.Errorf("quiet=%v (-want +got):\n%s", quiet, diff)
		}
	}
}

// TestSummary runs the whole report on a run folder: the table has every
// stage, the skip carries its reason, and under CI=true the skip alone
// fails the run unless KILN_ALLOW_SKIP names it.
func TestSummary(t *testing.T) {
	dir := t.TempDir()
	pass := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: no FIFOs here\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p"}
`
	write(t, filepath.Join(dir, "race.json"), pass)
	write(t, filepath.Join(dir, "stages.tsv"), "lint 100 130 0\nrace 100 400 0\n")
	for _, tt := range []struct {
		env    map[string]string
		status int
		want   []string
	}{
		{nil, 0, []string{"race  p TestA: no FIFOs here\n", "PASS\n"}},
		{map[string]string{"CI": "true"}, 1, []string{"TestA: no FIFOs here [CI: counts as a failure]\n", "CI=true: 1 skipped", "FAIL\n"}},
		{map[string]string{"CI": "true", "KILN_ALLOW_SKIP": "x p.TestA"}, 0, []string{"TestA: no FIFOs here\n", "PASS\n"}},
	} {
		var out, errOut bytes.Buffer
		status := run([]string{"summary", dir}, nil, &out, &errOut, func(k string) string { return tt.env[k] })
		if status != tt.status {
			t.Errorf("%v: status %d, want %d\n%s%s", tt.env, status, tt.status, out.String(), errOut.String())
		}
		table := strings.Join(strings.Fields(out.String()), " ")
		for _, w := range append(tt.want, "lint +0s 30s ok race +0s 300s ok 1 1 0 1 0", "wall time 300s") {
			if !strings.Contains(out.String(), w) && !strings.Contains(table, w) {
				t.Errorf("%v: summary lacks %q:\n%s", tt.env, w, out.String())
			}
		}
	}
}

// TestSummaryFailedStage: a stage that exits non-zero fails the run even
// when no test failed (gofmt, a conformance scenario).
func TestSummaryFailedStage(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "stages.tsv"), "lint 1 2 0\nhelm-check 1 5 2\n")
	var out bytes.Buffer
	if status := run([]string{"summary", dir}, nil, &out, &out, func(string) string { return "" }); status != 1 {
		t.Errorf("status %d, want 1:\n%s", status, out.String())
	}
	if !strings.Contains(out.String(), "FAIL") {
		t.Errorf("summary does not say FAIL:\n%s", out.String())
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
