package workspace

import (
	"bufio"
	"io"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Glob and Grep skip what ripgrep skips by default: hidden files and
// folders, and what .gitignore, .ignore and .git/info/exclude exclude,
// so a search of a JavaScript project does not wade through
// node_modules and dist.

// ignoreFiles are read in every folder a walk enters, in this order (a
// later file's rules win, as .ignore's do over .gitignore's in ripgrep).
var ignoreFiles = []string{".gitignore", ".ignore"}

// ignoreMaxBytes bounds one ignore file read.
const ignoreMaxBytes = 1 << 20

// ignoreRule is one pattern line of an ignore file.
type ignoreRule struct {
	base     string   // the folder holding the file, slash-separated, "" for the root
	segs     []string // the pattern's segments
	anchored bool     // a / before the end: matched from base, not at any depth
	dirOnly  bool     // a trailing /
	negate   bool     // a leading !
}

// ignorer holds the rules of the ignore files met so far.
type ignorer struct {
	rules []ignoreRule
}

// load reads dir's ignore files (dir relative to the root).
func (ig *ignorer) load(r *Root, dir string) {
	for _, name := range ignoreFiles {
		ig.loadFile(r, filepath.Join(dir, name), dir)
	}
}

func (ig *ignorer) loadFile(r *Root, rel, dir string) {
	f, err := r.open(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	base := filepath.ToSlash(dir)
	if base == "." {
		base = ""
	}
	sc := bufio.NewScanner(io.LimitReader(f, ignoreMaxBytes))
	for sc.Scan() {
		if rule, ok := parseIgnore(sc.Text(), base); ok {
			ig.rules = append(ig.rules, rule)
		}
	}
}

// parseIgnore reads one line of gitignore syntax.
func parseIgnore(line, base string) (ignoreRule, bool) {
	line = strings.TrimRight(line, "\r")
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRight(line, " \t")
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	rule := ignoreRule{base: base}
	if strings.HasPrefix(line, "!") {
		rule.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		rule.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	rule.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	for _, s := range strings.Split(line, "/") {
		if _, err := path.Match(s, ""); err != nil {
			return ignoreRule{}, false // malformed, as git ignores it
		}
		rule.segs = append(rule.segs, s)
	}
	return rule, true
}

// ignored reports whether rel (relative to the root) is excluded: the
// last rule that matches decides.
func (ig *ignorer) ignored(rel string, isDir bool) bool {
	rel = filepath.ToSlash(rel)
	out := false
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		sub := rel
		if r.base != "" {
			var ok bool
			if sub, ok = strings.CutPrefix(rel, r.base+"/"); !ok {
				continue
			}
		}
		segs := strings.Split(sub, "/")
		pat := r.segs
		if !r.anchored {
			pat = append([]string{"**"}, pat...)
		}
		if matchSegs(pat, segs) {
			out = !r.negate
		}
	}
	return out
}

// searchFilter decides which entries Glob and Grep look at.
type searchFilter struct {
	hidden   bool // look at hidden entries too
	noIgnore bool // look at ignored entries too
	ig       ignorer
}

// newSearchFilter loads the ignore files that apply to a walk of base:
// the root's .git/info/exclude and those of base and every folder above
// it.
func newSearchFilter(r *Root, base string, hidden, noIgnore bool) *searchFilter {
	f := &searchFilter{hidden: hidden, noIgnore: noIgnore}
	if noIgnore {
		return f
	}
	f.ig.loadFile(r, filepath.Join(".git", "info", "exclude"), ".")
	dirs := []string{"."}
	if base != "." {
		parts := strings.Split(base, string(filepath.Separator))
		for i := range parts {
			dirs = append(dirs, filepath.Join(parts[:i+1]...))
		}
	}
	for _, d := range dirs {
		f.ig.load(r, d)
	}
	return f
}

// skip reports whether the walk leaves out rel; a folder it enters has
// its own ignore files loaded.
func (f *searchFilter) skip(r *Root, rel string, isDir bool) bool {
	if !f.hidden && strings.HasPrefix(filepath.Base(rel), ".") {
		return true
	}
	if f.noIgnore {
		return false
	}
	if f.ig.ignored(rel, isDir) {
		return true
	}
	if isDir {
		f.ig.load(r, rel)
	}
	return false
}
