package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/textcut"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

const (
	// walkMaxEntries bounds one Glob or Grep walk.
	walkMaxEntries = 200000
	// grepMaxFileBytes skips files too large to be source.
	grepMaxFileBytes = 16 << 20
	// globMaxResults is as many paths as Claude Code's Glob returns.
	globMaxResults = 100
)

var errWalkLimit = errors.New("walk limit reached")

// walkTree visits every entry below rel (not rel itself) for Glob and
// Grep: the contents of .git folders are skipped and the walk stops with
// errWalkLimit after walkMaxEntries entries.
func (r *Root) walkTree(ctx context.Context, rel string, fn func(rel string, d fs.DirEntry) error) error {
	return r.walk(ctx, rel, true, walkMaxEntries, fn)
}

// walk visits every entry below rel (not rel itself) through descriptors
// opened beneath the root with O_NOFOLLOW, so no swapped-in symlink leads
// the walk outside. fn gets paths relative to the root. skipGit leaves out
// what .git folders hold; past limit entries (0: no limit) the walk stops
// with errWalkLimit.
func (r *Root) walk(ctx context.Context, rel string, skipGit bool, limit int, fn func(rel string, d fs.DirEntry) error) error {
	f, err := r.open(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	n := 0
	var walk func(f *os.File, rel string) error
	walk = func(f *os.File, rel string) error {
		defer f.Close()
		ents, err := f.ReadDir(-1)
		if err != nil {
			return nil // unreadable folders are skipped, as find does
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range ents {
			if n++; limit > 0 && n > limit {
				return errWalkLimit
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			child := filepath.Join(rel, e.Name())
			if err := fn(child, atEntry{e, int(f.Fd())}); err != nil {
				if errors.Is(err, fs.SkipDir) {
					continue
				}
				return err
			}
			if e.IsDir() && !(skipGit && e.Name() == ".git") {
				fd, err := unix.Openat(int(f.Fd()), e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				if err := walk(os.NewFile(uintptr(fd), child), child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(f, rel)
}

// atEntry answers Info through the parent folder's descriptor: the os
// package would lstat a path name, which a swapped folder could redirect.
type atEntry struct {
	fs.DirEntry
	dirfd int
}

func (e atEntry) Info() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(e.dirfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return statInfo{name: e.Name(), st: st}, nil
}

type statInfo struct {
	name string
	st   unix.Stat_t
}

func (i statInfo) Name() string       { return i.name }
func (i statInfo) Size() int64        { return i.st.Size }
func (i statInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i statInfo) IsDir() bool        { return i.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (i statInfo) Sys() any           { return &i.st }
func (i statInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// maxGlobAlternatives bounds the patterns one glob's {a,b} groups
// expand to: each group multiplies them, and thirty {a,b} groups (150
// bytes) expanded to a billion strings, more memory than kiln has.
const maxGlobAlternatives = 1024

// glob is a compiled slash-separated pattern where ** spans any number of
// folders and {a,b} offers alternatives.
type glob struct {
	alts [][]string // each alternative split into segments
}

// compileGlob expands pattern's braces once, so a walk does not expand
// them again for every file.
func compileGlob(pattern string) (*glob, error) {
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &glob{}
	for _, a := range alts {
		segs := strings.Split(a, "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, err
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether name, slash-separated, matches.
func (g *glob) match(name string) bool {
	segs := strings.Split(name, "/")
	for _, p := range g.alts {
		if matchSegs(p, segs) {
			return true
		}
	}
	return false
}

// matchSegs is wildcard matching over segments, ** as the star: on a
// mismatch it backtracks only to the last **, so it takes at most
// len(pat)×len(segs) steps. Trying every split for every ** took
// exponential time (twelve **/a/ against a 40-folder path ran for
// hours).
func matchSegs(pat, segs []string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(segs) {
		switch {
		case pi < len(pat) && pat[pi] == "**":
			star, mark = pi, si
			pi++
		case pi < len(pat) && segMatch(pat[pi], segs[si]):
			pi++
			si++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == "**" {
		pi++
	}
	return pi == len(pat)
}

func segMatch(pat, seg string) bool {
	ok, _ := path.Match(pat, seg)
	return ok
}

// expandBraces expands every {a,b} group, the first group first, and
// refuses more than maxGlobAlternatives results.
func expandBraces(p string) ([]string, error) {
	out := []string{p}
	for grew := true; grew; {
		grew = false
		var next []string
		for _, s := range out {
			i := strings.IndexByte(s, '{')
			j := strings.IndexByte(s[max(i, 0):], '}')
			if i < 0 || j < 0 {
				next = append(next, s)
				continue
			}
			j += i
			grew = true
			for alt := range strings.SplitSeq(s[i+1:j], ",") {
				if len(next) == maxGlobAlternatives {
					return nil, fmt.Errorf("its {…} groups expand to more than %d alternatives; use fewer groups or run several searches", maxGlobAlternatives)
				}
				next = append(next, s[:i]+alt+s[j+1:])
			}
		}
		out = next
	}
	return out, nil
}

// searchDir resolves a Glob or Grep path argument (default: the root) to
// its target: a file or folder linked from inside the root is searched.
func (w *Workspace) searchDir(tool, p string) (string, *toolcall.Result) {
	if p == "" {
		return ".", nil
	}
	rel, err := w.root.resolveTarget(p)
	if err != nil {
		return "", w.pathErr(tool, p, err)
	}
	return rel, nil
}

func globTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct {
		Pattern  string `json:"pattern"`
		Path     string `json:"path"`
		Hidden   bool   `json:"hidden"`
		NoIgnore bool   `json:"no_ignore"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Glob: %v", err)
	}
	if a.Pattern == "" {
		return toolcall.Errorf("Glob: pattern is empty; give one such as **/*.go")
	}
	pat, err := compileGlob(strings.TrimPrefix(filepath.ToSlash(a.Pattern), "./"))
	if err != nil {
		return toolcall.Errorf("Glob: pattern %q is malformed: %v", cut(a.Pattern, 200), err)
	}
	base, bad := w.searchDir("Glob", a.Path)
	if bad != nil {
		return bad
	}
	type hit struct {
		rel string
		mod time.Time
	}
	var hits []hit
	filter := newSearchFilter(w.root, base, a.Hidden, a.NoIgnore)
	err = w.root.walkTree(ctx, base, func(rel string, d fs.DirEntry) error {
		if filter.skip(w.root, rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		sub, _ := filepath.Rel(base, rel)
		if !d.IsDir() && pat.match(filepath.ToSlash(sub)) {
			var mod time.Time
			if info, err := d.Info(); err == nil {
				mod = info.ModTime()
			}
			hits = append(hits, hit{rel, mod})
		}
		return nil
	})
	note := ""
	switch {
	case errors.Is(err, errWalkLimit):
		note = fmt.Sprintf("\n(stopped after %d entries; narrow path)", walkMaxEntries)
	case err != nil:
		return w.pathErr("Glob", a.Path, err)
	}
	if len(hits) == 0 {
		return toolcall.Text("No files found" + note)
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.mod.Compare(a.mod) })
	var b strings.Builder
	for i, h := range hits {
		if i == globMaxResults {
			fmt.Fprintf(&b, "(%d more files match, %d in all; only the newest %d are shown: narrow the pattern or path)\n", len(hits)-i, len(hits), globMaxResults)
			break
		}
		b.WriteString(w.display(h.rel) + "\n")
	}
	return toolcall.Text(w.capText(b.String() + note))
}

// grepTypes maps ripgrep's common --type names to file globs.
var grepTypes = map[string]string{
	"go": "*.go", "js": "*.{js,mjs,cjs,jsx}", "ts": "*.{ts,tsx,mts,cts}", "tsx": "*.tsx", "py": "*.{py,pyi}", "rust": "*.rs",
	"java": "*.java", "kotlin": "*.{kt,kts}", "scala": "*.{scala,sc}", "swift": "*.swift", "cs": "*.{cs,csx}",
	"fsharp": "*.{fs,fsi,fsx}", "php": "*.{php,php3,php4,php5,phtml}", "c": "*.{c,h}", "cpp": "*.{cpp,cc,cxx,c++,hpp,hh,hxx,h,inl}",
	"objc": "*.{h,m}", "md": "*.{md,markdown,mdx}", "json": "*.{json,jsonl}", "yaml": "*.{yaml,yml}", "toml": "*.toml",
	"xml": "*.{xml,xsd,xsl,xslt}", "sh": "*.{sh,bash,zsh}", "html": "*.{html,htm}", "css": "*.{css,scss,sass,less}",
	"rb": "*.{rb,gemspec,rake}", "lua": "*.lua", "sql": "*.sql", "vue": "*.vue", "svelte": "*.svelte", "dart": "*.dart",
	"elixir": "*.{ex,exs,eex,heex}", "erlang": "*.{erl,hrl}", "haskell": "*.{hs,lhs}", "ocaml": "*.{ml,mli}",
	"clojure": "*.{clj,cljs,cljc,edn}", "r": "*.{R,r,Rmd}", "perl": "*.{pl,pm,t}", "zig": "*.zig", "nim": "*.nim",
	"julia": "*.jl", "proto": "*.proto", "tf": "*.{tf,tfvars}", "docker": "{Dockerfile,*.dockerfile,Dockerfile.*}",
	"make": "{Makefile,makefile,GNUmakefile,*.mk}", "cmake": "{CMakeLists.txt,*.cmake}", "gradle": "*.{gradle,gradle.kts}",
	"graphql": "*.{graphql,gql}", "txt": "*.txt", "csv": "*.csv", "ps": "*.{ps1,psm1,psd1}",
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Type       string `json:"type"`
	OutputMode string `json:"output_mode"`
	I          bool   `json:"-i"`
	N          *bool  `json:"-n"`
	A          int    `json:"-A"`
	B          int    `json:"-B"`
	C          int    `json:"-C"`
	HeadLimit  int    `json:"head_limit"`
	Offset     int    `json:"offset"`
	Multiline  bool   `json:"multiline"`
	Hidden     bool   `json:"hidden"`
	NoIgnore   bool   `json:"no_ignore"`
}

func grepTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	var a grepArgs
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("Grep: %v", err)
	}
	if a.Pattern == "" {
		return toolcall.Errorf("Grep: pattern is empty; give a regular expression (RE2 syntax)")
	}
	flags := ""
	if a.I {
		flags += "i"
	}
	if a.Multiline {
		flags += "s"
	}
	expr := a.Pattern
	if flags != "" {
		expr = "(?" + flags + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return toolcall.Errorf("Grep: pattern is not a valid RE2 regular expression (%v); lookarounds and backreferences are not supported", err)
	}
	mode := a.OutputMode
	if mode == "" {
		mode = "files_with_matches"
	}
	if mode != "content" && mode != "files_with_matches" && mode != "count" {
		return toolcall.Errorf("Grep: output_mode %q is not one of content, files_with_matches, count", a.OutputMode)
	}
	globText := a.Glob
	if a.Type != "" {
		g, ok := grepTypes[a.Type]
		if !ok {
			return toolcall.Errorf("Grep: unknown type %q; known types: %s (or use glob)", a.Type, strings.Join(slices.Sorted(maps.Keys(grepTypes)), ", "))
		}
		globText = g
	}
	var fileGlob *glob
	if globText != "" {
		if fileGlob, err = compileGlob(filepath.ToSlash(globText)); err != nil {
			return toolcall.Errorf("Grep: glob %q is malformed: %v", cut(globText, 200), err)
		}
	}
	base, bad := w.searchDir("Grep", a.Path)
	if bad != nil {
		return bad
	}
	before, after := max(a.B, a.C), max(a.A, a.C)
	numbers := a.N == nil || *a.N
	type fileHit struct {
		shown string
		mod   time.Time
	}
	var (
		out   []string  // content and count entries, in walk order
		files []fileHit // files_with_matches, sorted newest first below
	)
	// Content and count output is in walk order, so the walk stops once
	// it has what offset and head_limit ask for; files are sorted by
	// modification time, so all are found first.
	need := 0
	if a.HeadLimit > 0 && mode != "files_with_matches" {
		need = a.Offset + a.HeadLimit + 1 // one more tells whether any are left
	}
	enough := func() bool { return need > 0 && len(out) >= need }
	visit := func(rel string, mod time.Time) {
		if enough() {
			return
		}
		f, err := w.root.open(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return
		}
		data, err := io.ReadAll(io.LimitReader(f, grepMaxFileBytes+1))
		f.Close()
		if err != nil || len(data) > grepMaxFileBytes || bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
			return
		}
		shown := w.display(rel)
		switch mode {
		case "files_with_matches":
			if re.Match(data) {
				files = append(files, fileHit{shown, mod})
			}
		case "count":
			if n := countMatches(re, data, a.Multiline); n > 0 {
				out = append(out, fmt.Sprintf("%s:%d", shown, n))
			}
		default:
			for _, l := range contentLines(re, data, a.Multiline, before, after) {
				if enough() {
					return
				}
				if numbers {
					out = append(out, fmt.Sprintf("%s%s%d%s%s", shown, l.sep, l.n, l.sep, l.text))
				} else {
					out = append(out, shown+l.sep+l.text)
				}
			}
		}
	}
	modTime := func(d fs.DirEntry) time.Time {
		if info, err := d.Info(); err == nil {
			return info.ModTime()
		}
		return time.Time{}
	}
	note := ""
	// A path naming one file searches just it.
	if fi, err := os.Lstat(filepath.Join(w.root.dir, base)); err == nil && fi.Mode().IsRegular() {
		visit(base, fi.ModTime())
	} else {
		filter := newSearchFilter(w.root, base, a.Hidden, a.NoIgnore)
		err := w.root.walkTree(ctx, base, func(rel string, d fs.DirEntry) error {
			if enough() {
				return errWalkLimit
			}
			if filter.skip(w.root, rel, d.IsDir()) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if fileGlob != nil && !fileGlob.match(d.Name()) && !fileGlob.match(filepath.ToSlash(rel)) {
				return nil
			}
			visit(rel, modTime(d))
			return nil
		})
		switch {
		case errors.Is(err, errWalkLimit) && !enough():
			note = fmt.Sprintf("\n(stopped after %d entries; narrow path)", walkMaxEntries)
		case err != nil && !errors.Is(err, errWalkLimit):
			return w.pathErr("Grep", a.Path, err)
		}
	}
	if mode == "files_with_matches" {
		slices.SortStableFunc(files, func(a, b fileHit) int { return b.mod.Compare(a.mod) })
		for _, f := range files {
			out = append(out, f.shown)
		}
	}
	if len(out) == 0 {
		return toolcall.Text("No matches found" + note)
	}
	return toolcall.Text(w.pageLines(out, a.Offset, a.HeadLimit, note))
}

// pageLines joins entries offset.. (at most limit, 0: all) as whole lines
// within the budget; when entries remain it says the offset to continue
// from.
func (w *Workspace) pageLines(entries []string, offset, limit int, note string) string {
	if offset >= len(entries) {
		return fmt.Sprintf("(%d entries; offset %d is past the last)", len(entries), offset)
	}
	budget := w.room(200 + len(note))
	end := len(entries)
	if limit > 0 {
		end = min(end, offset+limit)
	}
	var b strings.Builder
	i := offset
	for ; i < end; i++ {
		line := entries[i]
		if b.Len()+len(line)+1 > budget {
			if b.Len() > 0 {
				break
			}
			line = textcut.Prefix(line, budget-20) + "… [line cut]"
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	switch {
	case i < end:
		fmt.Fprintf(&b, "\n(entries %d-%d of %d: as many as fit the %d-byte output budget; continue with offset %d)", offset+1, i, len(entries), w.budget(), i)
	case limit > 0 && end < len(entries):
		fmt.Fprintf(&b, "\n(stopped at head_limit=%d; continue with offset %d)", limit, end)
	}
	return b.String() + note
}

func countMatches(re *regexp.Regexp, data []byte, multiline bool) int {
	if multiline {
		return len(re.FindAllIndex(data, -1))
	}
	n := 0
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if re.Match(line) {
			n++
		}
	}
	return n
}

type grepLine struct {
	n    int
	sep  string // ":" for a match, "-" for context, as grep prints them
	text string
}

// contentLines returns the matching lines with their context, in order.
func contentLines(re *regexp.Regexp, data []byte, multiline bool, before, after int) []grepLine {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	match := make([]bool, len(lines))
	if multiline {
		starts := []int{0}
		for i, c := range data {
			if c == '\n' {
				starts = append(starts, i+1)
			}
		}
		for _, m := range re.FindAllIndex(data, -1) {
			first, _ := slices.BinarySearch(starts, m[0]+1)
			last, _ := slices.BinarySearch(starts, max(m[1], m[0]+1))
			for l := first - 1; l < last && l < len(lines); l++ {
				match[l] = true
			}
		}
	} else {
		for i, l := range lines {
			match[i] = re.MatchString(l)
		}
	}
	show := make([]string, len(lines))
	for i, m := range match {
		if !m {
			continue
		}
		for j := max(0, i-before); j <= min(len(lines)-1, i+after); j++ {
			if show[j] == "" {
				show[j] = "-"
			}
		}
		show[i] = ":"
	}
	var out []grepLine
	for i, s := range show {
		if s != "" {
			text := lines[i]
			if len(text) > readLineCut {
				text = textcut.Prefix(text, readLineCut) + "… [line cut]"
			}
			out = append(out, grepLine{i + 1, s, text})
		}
	}
	return out
}
