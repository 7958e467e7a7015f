package registry

import (
	"strings"
	"unicode/utf8"
)

// FirstSentence returns the first sentence of a tool description: up to a
// period, question or exclamation mark followed by white space, a CJK full
// stop, or a blank line. Generated doc comments and brief search results
// both use it, so they agree on what "the first sentence" is. Abbreviations
// such as "e.g." are rare enough in tool descriptions that handling them is
// not worth the complexity.
func FirstSentence(s string) string {
	s = strings.TrimSpace(s)
	for i, r := range s {
		switch r {
		case '.', '!', '?':
			next := i + 1
			if next >= len(s) || s[next] == ' ' || s[next] == '\n' || s[next] == '\t' {
				return s[:next]
			}
		case '。', '！', '？':
			return s[:i+utf8.RuneLen(r)]
		case '\n':
			if strings.HasPrefix(s[i:], "\n\n") {
				return s[:i]
			}
		}
	}
	return s
}
