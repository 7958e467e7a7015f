package workspace

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Edit matches old_string the way an agent copied it from Read, which
// shows a file's lines without \r and with secrets scrubbed: exactly
// first; then, in a CRLF file, with each \n standing for \r\n; and with
// each [REDACTED:kind] marker standing for the secret text it hid. The
// replacement takes the file's line ends, and a marker in new_string
// writes back the secret the same marker matched in old_string, so an
// agent can edit around a secret it was never shown.

// redactionRE is the scrubber's marker ([REDACTED:github-token],
// [REDACTED:env:NAME]).
var redactionRE = regexp.MustCompile(`\[REDACTED:[A-Za-z0-9_.:-]+\]`)

// editPlan is how old_string was found: count places, each replaced by
// the expansion of new.
type editPlan struct {
	count int
	apply func(replaceAll bool) string
	// how says, for the answer, what Edit had to do to match.
	how string
}

// planEdit finds old in text, or says why not.
func planEdit(text, old, repl string) (editPlan, error) {
	crlf := strings.Contains(text, "\r\n")
	if crlf {
		repl = toCRLF(repl)
	}
	if n := strings.Count(text, old); n > 0 {
		if err := markersKnown(old, repl); err != nil {
			return editPlan{}, err
		}
		return editPlan{count: n, apply: func(all bool) string {
			if all {
				return strings.ReplaceAll(text, old, repl)
			}
			return strings.Replace(text, old, repl, 1)
		}}, nil
	}
	how := ""
	if crlf && strings.Contains(old, "\n") {
		old, how = toCRLF(old), " (\\n matched the file's \\r\\n line ends)"
		if n := strings.Count(text, old); n > 0 {
			if err := markersKnown(old, repl); err != nil {
				return editPlan{}, err
			}
			return editPlan{count: n, how: how, apply: func(all bool) string {
				if all {
					return strings.ReplaceAll(text, old, repl)
				}
				return strings.Replace(text, old, repl, 1)
			}}, nil
		}
	}
	marks := redactionRE.FindAllStringIndex(old, -1)
	if len(marks) == 0 {
		return editPlan{}, nil
	}
	// Each marker matches the run of non-space text the secret was: the
	// scrubber replaces a token or a value, never spaces around it.
	var pat strings.Builder
	kinds := make([]string, len(marks))
	last := 0
	for i, m := range marks {
		pat.WriteString(regexp.QuoteMeta(old[last:m[0]]))
		pat.WriteString(`(\S+?)`)
		kinds[i] = old[m[0]:m[1]]
		last = m[1]
	}
	pat.WriteString(regexp.QuoteMeta(old[last:]))
	if last == len(old) {
		// Nothing after the last marker to end it: it runs to the end of
		// the non-space text.
		p := pat.String()
		pat.Reset()
		pat.WriteString(strings.TrimSuffix(p, `(\S+?)`) + `(\S+)`)
	}
	re, err := regexp.Compile(pat.String())
	if err != nil {
		return editPlan{}, nil
	}
	found := re.FindAllStringSubmatchIndex(text, -1)
	if len(found) == 0 {
		return editPlan{}, nil
	}
	newMarks := redactionRE.FindAllStringIndex(repl, -1)
	for _, m := range newMarks {
		if !slices.Contains(kinds, repl[m[0]:m[1]]) {
			return editPlan{}, fmt.Errorf("new_string holds %s, but old_string has no such marker, so Edit does not know which secret it stands for; put the marker in old_string where the secret is, or write the value itself", repl[m[0]:m[1]])
		}
	}
	expand := func(sub []int) string {
		// The i-th use of a kind in new_string takes the i-th secret of
		// that kind old_string matched (the last one when it has fewer).
		used := map[string]int{}
		var b strings.Builder
		prev := 0
		for _, m := range newMarks {
			kind := repl[m[0]:m[1]]
			b.WriteString(repl[prev:m[0]])
			b.WriteString(nthSecret(text, sub, kinds, kind, used[kind]))
			used[kind]++
			prev = m[1]
		}
		b.WriteString(repl[prev:])
		return b.String()
	}
	return editPlan{count: len(found), how: how + " ([REDACTED:…] matched the secret it hides, which stays in the file)", apply: func(all bool) string {
		var b strings.Builder
		prev := 0
		for i, sub := range found {
			if i > 0 && !all {
				break
			}
			b.WriteString(text[prev:sub[0]])
			b.WriteString(expand(sub))
			prev = sub[1]
		}
		b.WriteString(text[prev:])
		return b.String()
	}}, nil
}

// nthSecret is the text the n-th marker of kind matched in one match
// (sub holds the match's group offsets), or the last of that kind.
func nthSecret(text string, sub []int, kinds []string, kind string, n int) string {
	secret := ""
	seen := 0
	for i, k := range kinds {
		if k != kind {
			continue
		}
		secret = text[sub[2+2*i]:sub[3+2*i]]
		if seen == n {
			break
		}
		seen++
	}
	return secret
}

// markersKnown refuses a new_string with a marker old_string lacks: the
// match was exact, so the marker is not a secret Edit could put back.
func markersKnown(old, repl string) error {
	for _, m := range redactionRE.FindAllString(repl, -1) {
		if !strings.Contains(old, m) {
			return fmt.Errorf("new_string holds %s, but old_string has no such marker, so Edit does not know which secret it stands for; put the marker in old_string where the secret is, or write the value itself", m)
		}
	}
	return nil
}

// toCRLF turns s's bare \n into \r\n.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
