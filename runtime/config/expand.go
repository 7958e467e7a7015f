package config

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// StateDirVar expands, in a backend's settings, to the absolute
// gateway.state_dir. A server that resolves relative paths against its own
// install folder (server-memory's MEMORY_FILE_PATH lands in node_modules)
// needs an absolute path, and a config compiled into the binary has no
// folder of its own to write one against. It is kiln's, never read from
// the environment.
const StateDirVar = "KILN_STATE_DIR"

func isBuiltin(name string) bool { return name == StateDirVar }

// maxNesting bounds ${A:-${B:-…}} nesting; real configs use one level.
const maxNesting = 8

// ref is one ${VAR} occurrence found while expanding.
type ref struct {
	name       string
	hasDefault bool
	set        bool
}

// expander expands ${VAR} and ${VAR:-default} in one string. $$ is a
// literal $; any other $ is kept as is, so a password or regex with a $ in
// it survives unless it contains "${" or "$$".
type expander struct {
	s    string
	i    int
	get  func(string) (string, bool)
	refs []ref
}

// expand returns s expanded and the variables it referenced. As in a
// shell, ${VAR:-default} uses the default when VAR is unset or empty, and an
// unset ${VAR} expands to "".
func expand(s string, get func(string) (string, bool)) (string, []ref, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	e := &expander{s: s, get: get}
	out, err := e.until(false, 0, false)
	return out, e.refs, err
}

// until expands up to the end of the string, or up to and past the
// unmatched '}' that closes a default when inDefault is set.
func (e *expander) until(inDefault bool, depth int, optional bool) (string, error) {
	var b strings.Builder
	for e.i < len(e.s) {
		c := e.s[e.i]
		switch {
		case c == '}' && inDefault:
			e.i++
			return b.String(), nil
		case c != '$' || e.i+1 >= len(e.s):
			b.WriteByte(c)
			e.i++
		case e.s[e.i+1] == '$':
			b.WriteByte('$')
			e.i += 2
		case e.s[e.i+1] == '{':
			e.i += 2
			v, err := e.braced(depth, optional)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		default:
			b.WriteByte(c)
			e.i++
		}
	}
	if inDefault {
		return "", errUnterminated
	}
	return b.String(), nil
}

var errUnterminated = errors.New("unterminated ${; close it with } or write $$ for a literal $")

// braced expands one ${…} whose "${" has been consumed. A variable used
// only inside a default is optional: the outer variable can stand in for it.
func (e *expander) braced(depth int, optional bool) (string, error) {
	if depth >= maxNesting {
		return "", errors.New("${…} nested too deeply; use at most 8 levels")
	}
	start := e.i
	for e.i < len(e.s) && isNameByte(e.s[e.i], e.i == start) {
		e.i++
	}
	name := e.s[start:e.i]
	rest := e.s[e.i:]
	switch {
	case strings.HasPrefix(rest, "}") && name != "":
		e.i++
		v, ok := e.get(name)
		e.refs = append(e.refs, ref{name: name, hasDefault: optional, set: ok})
		return v, nil
	case strings.HasPrefix(rest, ":-") && name != "":
		e.i += 2
		def, err := e.until(true, depth+1, true)
		if err != nil {
			return "", err
		}
		v, ok := e.get(name)
		e.refs = append(e.refs, ref{name: name, hasDefault: true, set: ok})
		if v == "" {
			return def, nil
		}
		return v, nil
	case !strings.Contains(rest, "}"):
		return "", errUnterminated
	case name == "":
		return "", errors.New("${…} without a variable name; names are letters, digits and _ and do not start with a digit (write $$ for a literal $)")
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return "", errors.New("unsupported ${" + name + string(r) + "…}; use ${" + name + "} or ${" + name + ":-default} (write $$ for a literal $)")
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
}
