package docscan

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kilnmcp/kiln/runtime/config"
)

const repo = "../../.."

func pages(t *testing.T) []*Page {
	t.Helper()
	out, err := Pages(repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d Markdown pages in README.md and docs/", len(out))
	}
	return out
}

// varRef matches a ${VAR} or ${VAR:-default} reference.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// docEnv stands in for the reader's environment: every ${VAR} the snippet
// names is set, to a value of the kind its name suggests; nothing else is
// (a KILN_… variable would override the snippet's own settings).
func docEnv(snippet string) func(string) (string, bool) {
	named := map[string]bool{}
	for _, m := range varRef.FindAllStringSubmatch(snippet, -1) {
		named[m[1]] = true
	}
	return func(name string) (string, bool) {
		switch {
		case !named[name]:
			return "", false
		case strings.HasSuffix(name, "_URL") || strings.HasSuffix(name, "_ISSUER"):
			return "https://example.com/x", true
		case strings.HasSuffix(name, "_PORT"):
			return "8080", true
		}
		return "doc-example-value", true
	}
}

// TestYAMLBlocks loads every ```yaml block of README.md and docs/ as a
// whole kiln.yaml with the real loader: a snippet a reader pastes must
// load. ```yaml refused blocks must be refused (a deliberate error
// example stays an error), ```yaml other blocks (Helm values, Kubernetes)
// must parse as YAML.
func TestYAMLBlocks(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for _, p := range pages(t) {
		for _, b := range p.Blocks {
			if b.Lang != "yaml" && b.Lang != "yml" {
				continue
			}
			n++
			kind := strings.Join(b.Attrs, " ")
			switch {
			case b.Lang == "yml":
				t.Errorf("%s: fence it as yaml (yaml, yaml refused or yaml other)", b.Where())
			case kind == "":
				dir := readerFolder(t, b.Text)
				if _, err := config.LoadBytesWith([]byte(b.Text), b.Where(), dir, config.LoadOptions{Getenv: docEnv(b.Text), NoDotEnv: true}); err != nil {
					t.Errorf("%s: this kiln.yaml does not load (fence a deliberate error example as yaml refused, other YAML as yaml other):\n%v", b.Where(), err)
				}
			case kind == "refused":
				if _, err := config.LoadBytesWith([]byte(b.Text), b.Where(), dir, config.LoadOptions{Getenv: docEnv(b.Text), NoDotEnv: true}); err == nil {
					t.Errorf("%s: fenced as a refused example, but the loader accepts it", b.Where())
				}
			case kind == "other":
				var v any
				if err := yaml.Unmarshal([]byte(b.Text), &v); err != nil {
					t.Errorf("%s: not YAML: %v", b.Where(), err)
				}
			default:
				t.Errorf("%s: unknown yaml block kind %q; use yaml, yaml refused or yaml other", b.Where(), kind)
			}
		}
	}
	if n < 5 {
		t.Errorf("found only %d yaml blocks; is the scanner reading the fences?", n)
	}
}

// workspaceRoot matches a workspace backend's root: setting.
var workspaceRoot = regexp.MustCompile(`(?m)^\s+root:\s+(\S+)`)

// readerFolder is the folder a reader loads the snippet in: the relative
// workspace roots it names exist there, as they would on their machine.
func readerFolder(t *testing.T, snippet string) string {
	dir := t.TempDir()
	for _, m := range workspaceRoot.FindAllStringSubmatch(snippet, -1) {
		if root := strings.Trim(m[1], `"'`); !filepath.IsAbs(root) && !strings.Contains(root, "$") {
			if err := os.MkdirAll(filepath.Join(dir, root), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestLinks resolves every relative link: the file exists (inside the
// repository) and a #anchor names a heading of the page it points to.
func TestLinks(t *testing.T) {
	all := pages(t)
	byFile := map[string]*Page{}
	for _, p := range all {
		byFile[p.File] = p
	}
	n := 0
	for _, p := range all {
		for _, l := range p.Links() {
			n++
			file, anchor, _ := strings.Cut(l.Target, "#")
			target := p.File
			if file != "" {
				target = path.Clean(path.Join(path.Dir(p.File), file))
				if strings.HasPrefix(target, "../") {
					t.Errorf("%s: %s leads out of the repository", l.Where(), l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repo, target)); err != nil {
					t.Errorf("%s: %s: no such file (%s)", l.Where(), l.Target, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			tp, ok := byFile[target]
			if !ok {
				continue // an anchor into source code (#L12) is GitHub's to resolve
			}
			if !tp.Anchors()[anchor] {
				t.Errorf("%s: %s: %s has no heading with anchor #%s", l.Where(), l.Target, target, anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("found only %d relative links; is the scanner reading them?", n)
	}
}

// TestPagesSayWhoTheyAreFor: every docs page opens with its title and
// the reader it is for, and the README stays a front page.
func TestPagesSayWhoTheyAreFor(t *testing.T) {
	for _, p := range pages(t) {
		if p.File == "README.md" {
			if n := len(p.Prose) + blockLines(p); n > 200 {
				t.Errorf("README.md has %d lines; keep it to 200 and move the rest to docs/", n)
			}
			continue
		}
		var head []string
		for _, l := range p.Prose {
			if strings.TrimSpace(l.Text) != "" {
				head = append(head, l.Text)
			}
			if len(head) == 2 {
				break
			}
		}
		if len(head) < 2 || !strings.HasPrefix(head[0], "# ") || !strings.HasPrefix(head[1], "Who this is for:") {
			t.Errorf("%s: start with \"# Title\" and then a line \"Who this is for: …\"", p.File)
		}
	}
}

func blockLines(p *Page) int {
	n := 0
	for _, b := range p.Blocks {
		n += strings.Count(b.Text, "\n") + 2
	}
	return n
}

// TestScanner checks the scanner on a page whose answers are known, so a
// doc test cannot pass by finding nothing.
func TestScanner(t *testing.T) {
	dir := t.TempDir()
	md := "# Title\n\nRun `kiln serve --http ADDR` or `kiln://backends`.\n" +
		"See [a](other.md#some-heading) and [b](https://example.com) and `[c](skip.md)`.\n\n" +
		"## Some `heading`, here!\n\n## Some heading here\n\n" +
		"```sh\n$ KILN_X=1 bin/kiln-gen diff --config kiln.yaml | head\nmake generate && bin/kiln version\n```\n\n" +
		"~~~yaml refused\nversion: 2\n~~~\n\n[ref]: docs/x.md\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Read(dir, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blocks) != 2 || p.Blocks[1].Lang != "yaml" || !slices.Equal(p.Blocks[1].Attrs, []string{"refused"}) || p.Blocks[1].Text != "version: 2\n" {
		t.Errorf("blocks = %+v", p.Blocks)
	}
	var cmds [][]string
	for _, c := range p.Commands("kiln", "kiln-gen", "bin/kiln", "bin/kiln-gen") {
		cmds = append(cmds, c.Words)
	}
	want := [][]string{{"kiln-gen", "diff", "--config", "kiln.yaml"}, {"kiln", "version"}, {"kiln", "serve", "--http", "ADDR"}}
	if !slices.EqualFunc(cmds, want, slices.Equal) {
		t.Errorf("commands = %q, want %q", cmds, want)
	}
	var links []string
	for _, l := range p.Links() {
		links = append(links, l.Target)
	}
	if !slices.Equal(links, []string{"other.md#some-heading", "docs/x.md"}) {
		t.Errorf("links = %q", links)
	}
	a := p.Anchors()
	if !a["some-heading-here"] || !a["some-heading-here-1"] || !a["title"] {
		t.Errorf("anchors = %v", a)
	}
	if got := Flags([]string{"kiln", "serve", "--http=x", "-config", "FILE", "-"}); !slices.Equal(got, []string{"http", "config"}) {
		t.Errorf("flags = %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.md"), []byte("```sh\nkiln serve\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, "bad.md"); err == nil || !strings.Contains(err.Error(), "bad.md:1: the fence opened here is never closed") {
		t.Errorf("unclosed fence: err = %v", err)
	}
	usage := "Usage of kiln serve:\n  -config string\n    \tconfig file\n  -http string\n"
	if f := HelpFlags(usage); !f["config"] || !f["http"] || !f["h"] || f["usage"] {
		t.Errorf("help flags = %v", f)
	}
}

// makeTarget matches a rule's target in the Makefile.
var makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)

// TestMakeTargets: every `make TARGET` the docs show is a target of the
// Makefile, so a renamed target cannot leave a reader at "No rule".
func TestMakeTargets(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	n := 0
	for _, p := range pages(t) {
		for _, c := range p.Commands("make") {
			for _, w := range c.Words[1:] {
				if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
					continue
				}
				n++
				if !targets[w] {
					t.Errorf("%s: %s: the Makefile has no target %q", c.Where(), c.Text, w)
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("found only %d make targets in the docs; is the scanner finding them?", n)
	}
}
