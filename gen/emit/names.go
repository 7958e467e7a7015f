package emit

import (
	"go/token"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// This file is the one name resolver: every identifier emit writes comes
// from exported, packageName or a scope, so two spellings of a name can
// never disagree between the declaration and its uses.

// initialisms are written in capitals inside identifiers (golint's list plus
// the ones MCP tool schemas use), so "user_id" becomes UserID, not UserId.
var initialisms = setOf(
	"acl", "ai", "api", "ascii", "cpu", "csv", "css", "dns", "eof", "guid", "html",
	"http", "https", "id", "ip", "json", "jwt", "lhs", "llm", "mcp", "pdf", "qps",
	"ram", "rhs", "rpc", "sla", "smtp", "sql", "sse", "ssh", "tcp", "tls", "ttl",
	"udp", "ui", "uid", "uuid", "uri", "url", "utf8", "vm", "xml", "xmpp", "xsrf", "xss",
)

// symbolPrefixes name a leading symbol that would otherwise vanish, so "$ref"
// and "ref", or "-1" and "1", stay distinct before numbering kicks in.
var symbolPrefixes = map[rune]string{
	'$': "Dollar", '@': "At", '-': "Minus", '+': "Plus", '#': "Hash", '.': "Dot",
	'~': "Tilde", '!': "Not", '%': "Percent", '&': "And", '*': "Star", '<': "Lt",
	'>': "Gt", '=': "Eq", '?': "Q", '/': "Slash",
}

// packageReserved are names a backend package must not take: "main" and
// "init" are not importable, and the rest are identifiers or imports that
// generated files use next to the backend packages (emit's own packages
// among them, from ownDirs).
var packageReserved = setOf(append([]string{
	"main", "init", "r", "c", "ctx", "err", "args", "u", "v", "b",
	"context", "json", "embed", "manifest", "registry", "toolcall",
	"generated",
}, ownDirs...)...)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// words splits a name at every character that is neither a letter nor a
// digit, and at case changes: "numResults" → num, Results; "HTTPServer" →
// HTTP, Server. Digits stay attached to the word before them (utf8, base64).
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, string(rs[start:end]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush(i)
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && i-1 > start && !pluralInitialism(rs, start, i):
			// "HTTPServer": the last capital begins the next word.
			flush(i - 1)
			start = i - 1
		}
	}
	flush(len(rs))
	return out
}

// pluralInitialism reports whether rs[start:i] is an initialism followed by
// a final plural s, as in "URLs", which is one word, not "UR" + "Ls".
func pluralInitialism(rs []rune, start, i int) bool {
	return rs[i] == 's' && (i+1 == len(rs) || !unicode.IsLower(rs[i+1])) &&
		initialisms[strings.ToLower(string(rs[start:i]))]
}

// camelWord capitalises one word, writing initialisms (and their plurals,
// "ids" → IDs) in capitals and lowering the rest of all-caps words
// ("MAX" → Max) so SCREAMING_CASE reads as MaxResults.
func camelWord(w string) string {
	lw := strings.ToLower(w)
	if initialisms[lw] {
		return strings.ToUpper(lw)
	}
	if strings.HasSuffix(lw, "s") && initialisms[lw[:len(lw)-1]] {
		return strings.ToUpper(lw[:len(lw)-1]) + "s"
	}
	rest := w
	if strings.ToUpper(w) == w {
		rest = lw
	}
	r, n := utf8.DecodeRuneInString(rest)
	return string(unicode.ToUpper(r)) + rest[n:]
}

// exported turns any string into an exported Go identifier: camel-cased
// words, a word for a leading symbol, "N" before a leading digit and "X"
// before a letter without an upper case (CJK) or when nothing is left.
// Exported identifiers are never keywords, so no keyword escape is needed.
func exported(s string) string {
	var b strings.Builder
	if r, _ := utf8.DecodeRuneInString(s); symbolPrefixes[r] != "" {
		b.WriteString(symbolPrefixes[r])
	}
	for _, w := range words(s) {
		b.WriteString(camelWord(w))
	}
	id := b.String()
	first, _ := utf8.DecodeRuneInString(id)
	switch {
	case id == "":
		return "X"
	case unicode.IsDigit(first):
		return "N" + id
	case !unicode.IsUpper(first):
		return "X" + id
	}
	return id
}

// packageName turns a backend name into a package name: lower-case ASCII
// letters and digits only ("server-everything" → servereverything), "n"
// before a leading digit, "pkg" after a keyword or a reserved name.
func packageName(backend string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(backend) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	p := b.String()
	switch {
	case p == "":
		return "backend"
	case p[0] >= '0' && p[0] <= '9':
		p = "n" + p
	}
	if token.IsKeyword(p) || packageReserved[p] {
		p += "pkg"
	}
	return p
}

// scope hands out distinct identifiers within one Go scope (a package, a
// struct's fields, a type's methods). Callers claim names in a fixed
// (sorted) order, so the result is deterministic.
type scope struct {
	used map[string]bool
}

func newScope(taken ...string) *scope {
	s := &scope{used: make(map[string]bool)}
	for _, t := range taken {
		s.used[t] = true
	}
	return s
}

// claim takes the first free candidate, in the fixed stages callers pass
// (base, then backend prefix, then an Input/Output suffix), and falls back
// to the first candidate with a number: Name2, Name3, ...
func (s *scope) claim(candidates ...string) string {
	for _, c := range candidates {
		if c != "" && !s.used[c] {
			s.used[c] = true
			return c
		}
	}
	base := candidates[0]
	for i := 2; ; i++ {
		c := base + strconv.Itoa(i)
		if !s.used[c] {
			s.used[c] = true
			return c
		}
	}
}

// Fixed identifiers every backend package declares.
const (
	identBackend  = "Backend"
	identManifest = "Manifest"
	identRegister = "Register"
)

// names resolves the package-level identifiers of one backend package.
type names struct {
	pkg    *scope
	prefix string // the backend's exported form, for the second stage
}

func newNames(backend string) *names {
	return &names{pkg: newScope(identBackend, identManifest, identRegister), prefix: exported(backend)}
}

// toolFunc names the call function of a tool.
func (n *names) toolFunc(tool string) string {
	base := exported(tool)
	return n.pkg.claim(base, n.prefix+base)
}

// argsType names the argument struct of a tool.
func (n *names) argsType(tool string) string {
	base := exported(tool)
	return n.pkg.claim(base+"Args", n.prefix+base+"Args", base+"Input")
}

// nestedType names a type derived from a schema below a tool's arguments,
// such as FooArgsOptions for the "options" property of FooArgs.
func (n *names) nestedType(parent, part string) string {
	base := parent + exported(part)
	return n.pkg.claim(base, n.prefix+base)
}

// fieldNames names the fields of one struct, given its property names in
// sorted order.
func fieldNames(props []string) []string {
	s := newScope()
	out := make([]string, len(props))
	for i, p := range props {
		out[i] = s.claim(exported(p))
	}
	return out
}

// packageNames names every backend package, given sorted backend names.
func packageNames(backends []string) map[string]string {
	s := newScope()
	out := make(map[string]string, len(backends))
	for _, b := range backends {
		out[b] = s.claim(packageName(b))
	}
	return out
}

// exposedNames names every compiled tool as the direct and hybrid exposure
// modes list it when its backend is not bare. The runtime names bare
// backends' tools and tools that appear at run time with the same
// registry.ExposeNames, around these.
func exposedNames(ms []*manifest.Manifest) map[string]string {
	var tools []registry.ExposeTool
	for _, m := range ms {
		for _, t := range m.Tools {
			tools = append(tools, registry.ExposeTool{Backend: m.Backend, Tool: t.Name})
		}
	}
	names, _ := registry.ExposeNames(tools, nil)
	return names
}
