package diff

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Render writes changes for a human reviewer: one block per backend headed
// by its counts, one line per change labelled with its severity (Breaking
// as "BREAKING"), and a line diff under description and instructions
// changes. With more than one backend a total line follows. An empty list
// renders as "no changes". The output is plain text, sorted, with control
// and bidi characters escaped so a backend's text cannot disguise a change.
func Render(w io.Writer, changes []Change) error {
	cs := slices.Clone(changes)
	slices.SortFunc(cs, compare)
	var b strings.Builder
	if len(cs) == 0 {
		b.WriteString("no changes\n")
	}
	groups := 0
	for rest := cs; len(rest) > 0; groups++ {
		n := 1
		for n < len(rest) && rest[n].Backend == rest[0].Backend {
			n++
		}
		group := rest[:n]
		rest = rest[n:]
		if groups > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s (%d breaking)\n", clean(displayName(group[0].Backend)),
			plural(len(group), "change", "changes"), countBreaking(group))
		for _, c := range group {
			fmt.Fprintf(&b, "  %-10s %s\n", c.Severity, clean(c.String()))
			for _, line := range details(c) {
				b.WriteString(strings.TrimRightFunc("      "+clean(line), unicode.IsSpace) + "\n")
			}
		}
	}
	if groups > 1 {
		fmt.Fprintf(&b, "\n%s changed: %s (%d breaking)\n", plural(groups, "backend", "backends"),
			plural(len(cs), "change", "changes"), countBreaking(cs))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("render diff: %w", err)
	}
	return nil
}

func countBreaking(cs []Change) int {
	n := 0
	for _, c := range cs {
		if c.Severity == Breaking {
			n++
		}
	}
	return n
}

func details(c Change) []string {
	if c.Kind != Description && c.Kind != Instructions {
		return nil
	}
	return textDiff(c.Old, c.New)
}

// maxDiffCells bounds the LCS table; longer texts are shown whole, old then
// new, which is still correct, only less focused.
const maxDiffCells = 1 << 16

// textDiff is a line diff with one line of context, so that a one-word edit
// in a long tool description shows as that line, not the whole text.
func textDiff(old, new string) []string {
	a, b := lines(old), lines(new)
	if len(a)*len(b) > maxDiffCells {
		var out []string
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, "  "+a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, "- "+a[i])
			i++
		default:
			ops = append(ops, "+ "+b[j])
			j++
		}
	}
	return withContext(ops, 1)
}

// withContext keeps changed lines and ctx unchanged lines around each,
// replacing every other run of unchanged lines with "...".
func withContext(ops []string, ctx int) []string {
	keep := make([]bool, len(ops))
	for k, op := range ops {
		if strings.HasPrefix(op, "  ") {
			continue
		}
		for d := max(0, k-ctx); d <= min(len(ops)-1, k+ctx); d++ {
			keep[d] = true
		}
	}
	var out []string
	for k, op := range ops {
		switch {
		case keep[k]:
			out = append(out, op)
		case k == 0 || keep[k-1]:
			out = append(out, "  ...")
		}
	}
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
}

// clean escapes control and bidi characters, which a backend could use to
// rewrite a reviewer's terminal line or reorder what the reviewer reads.
// Tabs stay: they are harmless and common in descriptions.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029') {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
