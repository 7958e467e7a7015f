package emit

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/registry"
)

// maxDocRunes caps a doc line taken from a description: generated files are
// reviewed, and some backends put whole manuals in descriptions.
const maxDocRunes = 200

// docText turns a backend-supplied description into one safe comment line:
// the first non-empty line, cut at its first sentence and at maxDocRunes.
// Control, format (bidi, BOM) and separator characters become spaces, since
// Go source rejects a BOM mid-file and the rest could hide code from a
// reviewer; leading slashes go, so the text can never become a //go:
// directive or a nested comment; "*/" is split for the block comments jen
// uses for multi-line text.
func docText(s string) string {
	var line string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	out := registry.FirstSentence(clean(line))
	if rs := []rune(out); len(rs) > maxDocRunes {
		out = strings.TrimSpace(string(rs[:maxDocRunes])) + "…"
	}
	return out
}

// clean folds every run of space, control, format and separator characters
// into one space and makes the text inert inside a comment.
func clean(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
			unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out := strings.TrimLeft(b.String(), "/ ")
	return strings.ReplaceAll(out, "*/", "* /")
}

// quoted renders a backend or tool name for a comment: Go-quoted, so
// newlines and invisible characters show as escapes.
func quoted(s string) string {
	return strings.ReplaceAll(strconv.Quote(s), "*/", "* /")
}

// sentence joins doc fragments, ending each with a full stop.
func sentence(parts ...string) string {
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(p); !strings.ContainsRune(".!?。！？…", r) {
			p += "."
		}
		out = append(out, p)
	}
	return strings.Join(out, " ")
}
