package policy

import "strings"

// glob is a compiled pattern where * matches any run of characters (dots
// included, so "github.*" is every github tool) and every other character
// matches itself. Compiled to its literal parts so a call's check is a few
// string comparisons, not a backtracking match.
type glob struct {
	src   string
	parts []string // split on '*'; len 1 means no '*'
}

func compileGlob(s string) glob { return glob{src: s, parts: strings.Split(s, "*")} }

func (g glob) match(s string) bool {
	p := g.parts
	if len(p) == 1 {
		return s == p[0]
	}
	if !strings.HasPrefix(s, p[0]) {
		return false
	}
	s = s[len(p[0]):]
	last := p[len(p)-1]
	for _, mid := range p[1 : len(p)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// globs is a list of patterns; it matches when any does.
type globs []glob

func compileGlobs(ss []string) globs {
	out := make(globs, len(ss))
	for i, s := range ss {
		out[i] = compileGlob(strings.TrimSpace(s))
	}
	return out
}

// first returns the first pattern matching s, or "".
func (gs globs) first(s string) (string, bool) {
	for _, g := range gs {
		if g.match(s) {
			return g.src, true
		}
	}
	return "", false
}
