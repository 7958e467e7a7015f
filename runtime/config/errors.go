package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalid matches every *Error: the config or its .env file has problems.
var ErrInvalid = errors.New("invalid config")

// Problem is one thing wrong with a config, phrased with its fix.
type Problem struct {
	// File is the config path or label, or the .env path.
	File string
	// Line is 1-based; 0 when the value did not come from the file
	// (defaults, environment overrides) or the file as a whole is at fault.
	Line int
	// Key is the key path, e.g. "backends.github.transport"; "" for the file.
	Key string
	// Env names the KILN_… variable that set the value, if one did.
	Env string
	// Message says what is wrong and what to do instead.
	Message string
}

// String renders the problem as "file:line: key (from ENV): message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Key != "" {
		b.WriteString(": " + p.Key)
	}
	if p.Env != "" {
		b.WriteString(" (from " + p.Env + ")")
	}
	b.WriteString(": " + p.Message)
	return b.String()
}

// Error lists every problem found while loading one config, one per line,
// so a single run shows the whole repair list.
type Error struct {
	Problems []Problem
}

// Error implements error.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// problems collects Problems for one file.
type problems struct {
	file string
	list []Problem
}

func (ps *problems) add(line int, key, format string, args ...any) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// addValue reports a problem with a layered value, naming the environment
// override that set it and the variables it used that were unset, the
// usual cause of an empty or odd value.
func (ps *problems) addValue(v value, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(v.unset) > 0 {
		msg += fmt.Sprintf(" (unset: %s)", strings.Join(v.unset, ", "))
	}
	ps.list = append(ps.list, Problem{File: ps.file, Line: v.line, Key: v.key, Env: v.env, Message: msg})
}

// err returns the problems as one *Error in file order, or nil.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	ps.sort()
	return &Error{Problems: ps.list}
}

// joinProblems returns the problems of several files as one *Error, each
// file's in line order and the files in the order given (the .env file
// before the config whose values it feeds), or nil when there are none.
func joinProblems(files ...*problems) error {
	var all []Problem
	for _, ps := range files {
		ps.sort()
		all = append(all, ps.list...)
	}
	if len(all) == 0 {
		return nil
	}
	return &Error{Problems: all}
}

// sort orders the problems by line.
func (ps *problems) sort() {
	// Problems without a line (environment overrides) go last.
	order := func(l int) int {
		if l == 0 {
			return int(^uint(0) >> 1)
		}
		return l
	}
	sort.SliceStable(ps.list, func(i, j int) bool { return order(ps.list[i].Line) < order(ps.list[j].Line) })
}
