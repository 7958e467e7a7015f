package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func streamCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print only failures, not a line per package")
	if fs.Parse(args) != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: go test -json ... | testreport stream [-quiet] FILE")
		return 2
	}
	f, err := os.Create(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 1
	}
	w := bufio.NewWriter(stdout)
	err = stream(stdin, f, w, *quiet)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 1
	}
	return 0
}

// progress turns an event stream back into what go test prints without
// -json in package list mode: a line per package, and in full the output
// of each test that fails and of each package that fails (its unfinished
// tests, a panic outside any test, the shuffle seed). Passing tests'
// output is held only until they pass.
type progress struct {
	w     io.Writer
	quiet bool
	tests map[testKey][]string
	pkgs  map[string][]string
}

// stream copies events from r to file and prints their progress to w,
// line by line as they come: the log of a 10-minute e2e run must not
// arrive in one piece at its end.
func stream(r io.Reader, file io.Writer, w *bufio.Writer, quiet bool) error {
	p := &progress{w: w, quiet: quiet, tests: map[testKey][]string{}, pkgs: map[string][]string{}}
	fw := bufio.NewWriter(file)
	var werr error
	keep := func(line []byte) {
		if werr == nil {
			_, werr = fw.Write(append(line, '\n'))
		}
	}
	err := scanEvents(r, func(line []byte, e *event) {
		keep(line)
		p.event(e)
		w.Flush()
	}, func(line []byte) {
		keep(line)
		fmt.Fprintf(w, "%s\n", line)
		w.Flush()
	})
	p.rest()
	if err == nil {
		err = werr
	}
	if ferr := fw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func (p *progress) event(e *event) {
	k := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		io.WriteString(p.w, e.Output)
	case e.Package == "":
	case e.Test != "":
		switch e.Action {
		case "output":
			p.tests[k] = append(p.tests[k], e.Output)
		case "fail":
			p.print(p.tests[k])
			delete(p.tests, k)
		case "pass", "skip":
			delete(p.tests, k)
		}
	case e.Action == "output":
		p.pkgs[e.Package] = append(p.pkgs[e.Package], e.Output)
	case e.Action == "pass" || e.Action == "skip":
		if !p.quiet {
			for _, l := range p.pkgs[e.Package] {
				if strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
					io.WriteString(p.w, l)
				}
			}
		}
		delete(p.pkgs, e.Package)
	case e.Action == "fail":
		p.unfinished(e.Package)
		p.print(p.pkgs[e.Package])
		delete(p.pkgs, e.Package)
	}
}

// unfinished prints the output of pkg's tests that never ended: a test
// that hung until the timeout panic, or one running when another panicked.
func (p *progress) unfinished(pkg string) {
	var keys []testKey
	for k := range p.tests {
		if k.pkg == pkg {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b testKey) int { return strings.Compare(a.test, b.test) })
	for _, k := range keys {
		p.print(p.tests[k])
		delete(p.tests, k)
	}
}

// rest prints what a stream cut short (go test killed) left unreported.
func (p *progress) rest() {
	pkgs := make([]string, 0, len(p.pkgs))
	for k := range p.tests {
		if !slices.Contains(pkgs, k.pkg) {
			pkgs = append(pkgs, k.pkg)
		}
	}
	for pkg := range p.pkgs {
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		p.unfinished(pkg)
		p.print(p.pkgs[pkg])
		delete(p.pkgs, pkg)
	}
}

func (p *progress) print(lines []string) {
	for _, l := range lines {
		io.WriteString(p.w, l)
	}
}
