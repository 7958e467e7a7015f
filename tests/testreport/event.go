package main

import (
	"bufio"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus
// the build-output events Go 1.24 added).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string
}

// scanEvents calls fn for each event of r and raw for each line that is
// not one (go test's own stderr, when a caller merged it in).
func scanEvents(r io.Reader, fn func(line []byte, e *event), raw func(line []byte)) error {
	sc := bufio.NewScanner(r)
	// One output event holds one line of test output, which a test that
	// prints a large JSON document can make megabytes long.
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			raw(line)
			continue
		}
		fn(line, &e)
	}
	return sc.Err()
}

// testKey names one test (or subtest) of one package.
type testKey struct{ pkg, test string }

// skip is a test that called Skip, and what it said.
type skip struct {
	testKey
	reason string
}

// tally is what one stage's events add up to.
type tally struct {
	packages map[string]bool // packages whose tests ran
	tests    int             // top-level tests that passed or failed
	subtests int
	skips    []skip
	fails    []string // "package TestName" of each failed test, leaves only, and each failed package without one
}

// logLine is the "    file.go:12: " prefix testing puts on t.Log, t.Skip
// and t.Error lines.
var logLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: `)

// count reads one stage's event stream. Several runs may be concatenated
// (tests/fuzz.sh appends one per fuzz target).
func count(r io.Reader) (*tally, error) {
	t := &tally{packages: map[string]bool{}}
	out := map[testKey][]string{}
	done := map[testKey]bool{}
	failed := map[testKey]string{} // → a note on how it failed
	pkgFailedTests := map[string]bool{}
	err := scanEvents(r, func(_ []byte, e *event) {
		k := testKey{e.Package, e.Test}
		switch {
		case e.Test == "" && e.Package == "":
			// build-output and build-fail: the package's fail event follows.
		case e.Test == "":
			switch e.Action {
			case "pass":
				t.packages[e.Package] = true
			case "fail":
				t.packages[e.Package] = true
				for tk := range out {
					if tk.pkg == e.Package && !done[tk] {
						failed[tk] = " (did not finish)"
						done[tk] = true
						pkgFailedTests[e.Package] = true
					}
				}
				switch {
				case e.FailedBuild != "":
					t.fails = append(t.fails, shortPkg(e.Package)+" (build failed)")
				case !pkgFailedTests[e.Package]:
					t.fails = append(t.fails, shortPkg(e.Package)+" (package failed outside any test: see its output)")
				}
			}
		case e.Action == "output":
			out[k] = append(out[k], e.Output)
		case e.Action == "run":
			out[k] = append(out[k], "")
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			done[k] = true
			if e.Action == "skip" {
				t.skips = append(t.skips, skip{testKey{shortPkg(k.pkg), k.test}, skipReason(out[k])})
			} else if strings.Contains(k.test, "/") {
				t.subtests++
			} else {
				t.tests++
			}
			if e.Action == "fail" {
				failed[k] = ""
				pkgFailedTests[k.pkg] = true
			}
			delete(out, k)
		}
	}, func([]byte) {})
	for k, note := range failed {
		if !hasFailedChild(failed, k) {
			t.fails = append(t.fails, shortPkg(k.pkg)+" "+k.test+note)
		}
	}
	slices.Sort(t.fails)
	slices.SortFunc(t.skips, func(a, b skip) int { return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test) })
	return t, err
}

// hasFailedChild reports whether a subtest of k failed too; the leaf
// names the failure, its parents only inherit it.
func hasFailedChild(failed map[testKey]string, k testKey) bool {
	for o := range failed {
		if o.pkg == k.pkg && strings.HasPrefix(o.test, k.test+"/") {
			return true
		}
	}
	return false
}

// skipReason is the message a test skipped with: its last log line and
// what followed it, without the file:line prefix. t.Skip logs the message
// just before the "--- SKIP" line.
func skipReason(lines []string) string {
	var kept []string
	for _, l := range lines {
		l = strings.TrimRight(l, "\n")
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") || strings.TrimSpace(l) == "" {
			continue
		}
		if logLine.MatchString(l) {
			kept = kept[:0]
			l = logLine.ReplaceAllString(l, "")
		}
		kept = append(kept, strings.TrimSpace(l))
	}
	if len(kept) == 0 {
		return "(no reason given)"
	}
	return strings.Join(kept, " ")
}

const module = "github.com/kilnmcp/kiln"

// shortPkg drops the module path, as the README's Layout table does.
func shortPkg(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}
