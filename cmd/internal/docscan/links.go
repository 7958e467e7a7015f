package docscan

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is a relative link in prose: a path, a path#anchor or a #anchor.
type Link struct {
	Line
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s+(\S+)`)
	external   = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// Links returns the page's relative links; absolute URLs (https:, mailto:,
// kiln:) are not the tests' to resolve. Code spans are not links.
func (p *Page) Links() []Link {
	var out []Link
	for _, l := range p.Prose {
		text := inlineCode.ReplaceAllString(l.Text, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			t = strings.Trim(t, "<>")
			if !external.MatchString(t) {
				out = append(out, Link{l, t})
			}
		}
	}
	return out
}

// Anchors returns the anchors GitHub makes of the page's headings: the
// text lowercased, code ticks and punctuation other than - and _ dropped,
// spaces as -, and a repeated anchor numbered -1, -2.
func (p *Page) Anchors() map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, l := range p.Prose {
		t := strings.TrimLeft(l.Text, " ")
		if !strings.HasPrefix(t, "#") {
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		if level > 6 || len(t) == level || t[level] != ' ' {
			continue
		}
		a := Slug(t[level+1:])
		if n := seen[a]; n > 0 {
			set[a+"-"+strconv.Itoa(n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// Slug is GitHub's anchor for a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
