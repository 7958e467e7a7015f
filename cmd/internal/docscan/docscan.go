package docscan

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	File string // relative to the repository root
	Line int    // of the opening fence
	// Lang is the info string's first word, Attrs the rest (```yaml refused).
	Lang  string
	Attrs []string
	Text  string
}

// Where names a block or a line for a failure message, as editors link it.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Files returns README.md and every Markdown file under docs/, relative to
// root, sorted.
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}

// Page is one Markdown file split into its fenced blocks and its prose
// (every line outside a fence, with its line number).
type Page struct {
	File   string
	Blocks []Block
	Prose  []Line
}

// Line is a line of prose or of a block.
type Line struct {
	File string
	N    int
	Text string
}

// Where names the line as editors link it.
func (l Line) Where() string { return fmt.Sprintf("%s:%d", l.File, l.N) }

// Read splits root/file into blocks and prose. An unclosed fence is an
// error: everything after it would silently go unchecked.
func Read(root, file string) (*Page, error) {
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	p := &Page{File: file}
	var open *Block
	var fence string
	var body strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if open == nil {
			if f := fenceOf(trimmed); f != "" {
				info := strings.Fields(strings.TrimPrefix(trimmed, f))
				open, fence = &Block{File: file, Line: n}, f
				if len(info) > 0 {
					open.Lang, open.Attrs = info[0], info[1:]
				}
				body.Reset()
				continue
			}
			p.Prose = append(p.Prose, Line{file, n, line})
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimLeft(trimmed, fence[:1]) == "" {
			open.Text = body.String()
			p.Blocks = append(p.Blocks, *open)
			open = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if open != nil {
		return nil, fmt.Errorf("%s: the fence opened here is never closed", open.Where())
	}
	return p, nil
}

func fenceOf(s string) string {
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(s, c) {
			return s[:len(s)-len(strings.TrimLeft(s, c[:1]))]
		}
	}
	return ""
}

var separators = regexp.MustCompile(`\s*(?:\|\||&&|\||;)\s*`)

// shellLangs are the fences whose lines are commands a reader may paste.
var shellLangs = []string{"sh", "bash", "console", "shell", "text", ""}

// inlineCode matches a Markdown code span.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// Commands returns every invocation of one of bins (e.g. "kiln",
// "bin/kiln") shown in the page: in a line of a shell or text block, or a
// code span in prose. A line is split into its commands (pipes, ;, &&),
// a leading "$ " and VAR=value words are dropped, "go run ./cmd/X" counts
// as X, and the first word is the binary's base name.
func (p *Page) Commands(bins ...string) []Command {
	var out []Command
	for _, b := range p.Blocks {
		if !slices.Contains(shellLangs, b.Lang) {
			continue
		}
		for i, line := range strings.Split(b.Text, "\n") {
			for _, seg := range segments(line) {
				if c, ok := command(seg, bins); ok {
					out = append(out, Command{Line{p.File, b.Line + 1 + i, line}, c})
				}
			}
		}
	}
	for _, l := range p.Prose {
		for _, m := range inlineCode.FindAllStringSubmatch(l.Text, -1) {
			for _, seg := range segments(m[1]) {
				if c, ok := command(seg, bins); ok {
					out = append(out, Command{Line{l.File, l.N, m[1]}, c})
				}
			}
		}
	}
	return out
}

// Command is one invocation: Words[0] is the binary's base name.
type Command struct {
	Line
	Words []string
}

// segments splits a shell line into its commands: at pipes, ;, && and
// ||, and before a comment or a redirection.
func segments(s string) []string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "$ ")
	for _, cut := range []string{" # ", " > ", " 2>", " < "} {
		s, _, _ = strings.Cut(s, cut)
	}
	return separators.Split(s, -1)
}

func command(s string, bins []string) ([]string, bool) {
	words := strings.Fields(s)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:]
	}
	if len(words) > 2 && words[0] == "go" && words[1] == "run" { // go run [-tags X] ./cmd/kiln-gen …
		i := 2
		for i < len(words) && !strings.HasPrefix(words[i], "./cmd/") {
			i++
		}
		words = words[i:]
	}
	if len(words) == 0 || !slices.Contains(bins, words[0]) {
		return nil, false
	}
	words[0] = filepath.Base(words[0])
	return words, true
}

// Flags returns the flag names (without dashes or =value) among words.
func Flags(words []string) []string {
	var out []string
	for _, w := range words {
		if w == "-" || w == "--" || !strings.HasPrefix(w, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		out = append(out, strings.Trim(name, `"'`))
	}
	return out
}

// helpFlag matches a flag line of the flag package's usage output.
var helpFlag = regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// HelpFlags returns the flags a flag package usage text lists, plus -h
// and -help, which every flag set takes.
func HelpFlags(usage string) map[string]bool {
	set := map[string]bool{"h": true, "help": true}
	for _, m := range helpFlag.FindAllStringSubmatch(usage, -1) {
		set[m[1]] = true
	}
	return set
}

// CLI is what a binary takes: its subcommands (a path such as "auth
// login") and, for each, the usage text `BIN SUB -h` prints.
type CLI struct {
	Bins  []string          // how the docs invoke it: kiln, bin/kiln, ./cmd/kiln
	Usage map[string]string // subcommand → its flag usage
}

// Check returns one problem per command line of the pages that names a
// subcommand the CLI lacks or a flag its subcommand does not take, and
// how many lines it checked.
func (c CLI) Check(pages []*Page) (problems []string, checked int) {
	for _, p := range pages {
		for _, cmd := range p.Commands(c.Bins...) {
			checked++
			args := cmd.Words[1:]
			if len(args) == 0 || slices.Contains([]string{"-h", "--help", "-v", "--version"}, args[0]) {
				continue
			}
			sub, rest := "", args
			for k := range c.Usage {
				ks := strings.Fields(k)
				if len(ks) <= len(args) && slices.Equal(ks, args[:len(ks)]) && len(k) > len(sub) {
					sub, rest = k, args[len(ks):]
				}
			}
			if sub == "" {
				problems = append(problems, fmt.Sprintf("%s: %s: %s has no subcommand %q", cmd.Where(), cmd.Text, cmd.Words[0], args[0]))
				continue
			}
			known := HelpFlags(c.Usage[sub])
			for _, f := range Flags(rest) {
				if !known[f] {
					problems = append(problems, fmt.Sprintf("%s: %s: %s %s has no flag -%s", cmd.Where(), cmd.Text, cmd.Words[0], sub, f))
				}
			}
		}
	}
	return problems, checked
}

// CheckDocs is Check over README.md and docs/ under root.
func (c CLI) CheckDocs(root string) (problems []string, checked int, err error) {
	pages, err := Pages(root)
	if err != nil {
		return nil, 0, err
	}
	problems, checked = c.Check(pages)
	return problems, checked, nil
}

// Pages reads README.md and docs/ under root.
func Pages(root string) ([]*Page, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var out []*Page
	for _, f := range files {
		p, err := Read(root, f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
