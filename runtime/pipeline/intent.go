package pipeline

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

const (
	groupLines   = 8  // lines per section when output has no blank lines
	maxTerms     = 32 // a longer intent is prose, not a query
	noteTerms    = 10 // terms named in the note
	noteTermClip = 32 // bytes of each term named in the note
	maxArrayDep  = 16 // how deep the JSON filter looks for the array to filter
)

// stopWords never count as intent terms: they match almost every section
// and would dilute the 30% rule. The request verbs at the end are how people
// phrase an intent ("find the errors"), not what the output contains.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then else of in on at to for from by with
		about as into like through after over between out against during without before under
		around among is are was were be been being am do does did doing have has had having i me
		my we our you your he him his she her it its they them their this that these those what
		which who whom whose when where why how all any both each few more most other some such no
		nor not only own same so than too very can will just should would could may might must
		shall there here up down also etc via per
		please find show get give tell want need look see check fetch retrieve`) {
		m[w] = true
	}
	return m
}()

// intentTerms returns the lowercased words of intent, in order, without
// stop words, one-rune words or repeats.
func intentTerms(intent string) []string {
	var terms []string
	for _, w := range strings.FieldsFunc(strings.ToLower(intent), isSplit) {
		if len(terms) == maxTerms {
			break
		}
		if utf8.RuneCountInString(w) < 2 || stopWords[w] || contains(terms, w) {
			continue
		}
		terms = append(terms, w)
	}
	return terms
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isSplit(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mentions reports whether lowered text holds at least 30% of the terms.
// A term matches at the start of a word, so "error" finds "errors" but "id"
// does not find "provide". Scripts written without spaces match only at the
// start of a run of letters: a known limit.
func mentions(lowered string, terms []string) bool {
	matched := 0
	for _, t := range terms {
		if hasWordPrefix(lowered, t) {
			matched++
		}
	}
	return matched*10 >= 3*len(terms)
}

func hasWordPrefix(text, term string) bool {
	for off := 0; off < len(text); {
		j := strings.Index(text[off:], term)
		if j < 0 {
			return false
		}
		j += off
		r, _ := utf8.DecodeLastRuneInString(text[:j])
		if j == 0 || isSplit(r) {
			return true
		}
		off = j + 1
	}
	return false
}

// filterIntent keeps the sections of s that mention at least 30% of the
// intent's terms and returns the filtered text and a note for the trailer.
// JSON is filtered item by item, so it stays valid (trimmed) JSON for the
// chunking stage; other text by paragraph, or by groups of lines when it has
// no blank lines.
// When no section or every section matches, s comes back unchanged and
// unannotated: an unmatched intent is no reason to withhold output, and the
// caller sees the miss in Stats.
//
// doc and isJSON are parseContainer(s), which the caller shares with the
// chunking stage: validating a megabyte of JSON is most of the cost of
// both stages.
func filterIntent(s, doc string, isJSON bool, intent string) (out, note string, ok bool) {
	terms := intentTerms(intent)
	if len(terms) == 0 {
		return s, "", false
	}
	if isJSON {
		return filterJSON(doc, terms)
	}
	return filterText(s, terms)
}

type section struct{ start, end, lines int }

func filterText(s string, terms []string) (string, string, bool) {
	secs, unit := paragraphs(s), "paragraph"
	if len(secs) < 2 {
		secs, unit = lineGroups(s), "line"
	}
	if len(secs) < 2 {
		return s, "", false
	}
	// Lowercasing can change a rune's byte length, so offsets into a
	// lowercased copy only line up for ASCII; other text is lowered one
	// section at a time.
	lower, ascii := s, isASCII(s)
	if ascii {
		lower = strings.ToLower(s)
	}
	keep := make([]bool, len(secs))
	kept := 0
	for i, sec := range secs {
		text := lower[sec.start:sec.end]
		if !ascii {
			text = strings.ToLower(text)
		}
		if mentions(text, terms) {
			keep[i] = true
			kept++
		}
	}
	if kept == 0 || kept == len(secs) {
		return s, "", false
	}
	join := "\n\n"
	if unit == "line" {
		join = "\n"
	}
	var b strings.Builder
	gap := 0
	writeGap := func() {
		if gap > 0 {
			b.WriteString(sep(b.Len(), "", join))
			b.WriteString("[... " + plural(gap, unit) + " omitted ...]")
			gap = 0
		}
	}
	for i, sec := range secs {
		if !keep[i] {
			if unit == "line" {
				gap += sec.lines
			} else {
				gap++
			}
			continue
		}
		writeGap()
		b.WriteString(sep(b.Len(), "", join))
		b.WriteString(s[sec.start:sec.end])
	}
	writeGap()
	what := plural(len(secs), unit+"s")
	if unit == "line" {
		what = plural(len(secs), "group") + " of " + strconv.Itoa(groupLines) + " lines"
	}
	return b.String(), intentNote(kept, what, terms), true
}

func intentNote(kept int, of string, terms []string) string {
	var list strings.Builder
	for i, t := range terms[:min(len(terms), noteTerms)] {
		list.WriteString(sep(i, "", ", "))
		list.WriteString(clip(t, noteTermClip))
	}
	if len(terms) > noteTerms {
		list.WriteString(", …")
	}
	return "[Intent filter: kept " + strconv.Itoa(kept) + " of " + of +
		" mentioning at least 30% of: " + list.String() + "]"
}

// plural renders "1 line", "3 lines"; a unit already ending in s is shown as
// given for counts other than one.
func plural(n int, unit string) string {
	unit = strings.TrimSuffix(unit, "s")
	if n != 1 {
		unit += "s"
	}
	return strconv.Itoa(n) + " " + unit
}

// paragraphs splits s at blank lines.
func paragraphs(s string) []section {
	var secs []section
	cur := section{start: -1}
	for i := 0; i < len(s); {
		end := strings.IndexByte(s[i:], '\n')
		next := i + end + 1
		if end < 0 {
			end, next = len(s)-i, len(s)
		}
		line := s[i : i+end]
		switch {
		case strings.TrimSpace(line) == "":
			if cur.start >= 0 {
				secs = append(secs, cur)
				cur = section{start: -1}
			}
		case cur.start < 0:
			cur = section{start: i, end: i + end, lines: 1}
		default:
			cur.end = i + end
			cur.lines++
		}
		i = next
	}
	if cur.start >= 0 {
		secs = append(secs, cur)
	}
	return secs
}

// lineGroups splits s into runs of groupLines lines.
func lineGroups(s string) []section {
	var secs []section
	cur := section{start: 0}
	for i := 0; i < len(s); {
		end := strings.IndexByte(s[i:], '\n')
		next := i + end + 1
		if end < 0 {
			end, next = len(s)-i, len(s)
		}
		cur.end = i + end
		cur.lines++
		if cur.lines == groupLines || next == len(s) {
			secs = append(secs, cur)
			cur = section{start: next}
		}
		i = next
	}
	return secs
}

// filterJSON filters the items of the largest array in t (by bytes, with at
// least two items) and splices the survivors back, so the result is still
// valid JSON with every other value intact. Items match on their values,
// never their keys: keys repeat in every item and would match everywhere.
func filterJSON(t string, terms []string) (string, string, bool) {
	var best struct {
		start, end int
		path       string
	}
	walkArrays(t, func(start, end int, path []string) {
		if end-start > best.end-best.start {
			best.start, best.end, best.path = start, end, strings.Join(path, " > ")
		}
	})
	if best.end == 0 {
		return t, "", false
	}
	arr := t[best.start:best.end]
	var b strings.Builder
	b.WriteString(t[:best.start])
	b.WriteByte('[')
	kept, n := 0, 0
	var vals []byte
	for e := range jsontext.Elements(arr) {
		n++
		vals = appendValues(vals[:0], e, 0)
		if mentions(strings.ToLower(string(vals)), terms) {
			b.WriteString(sep(kept, "", ","))
			b.WriteString(e)
			kept++
		}
	}
	if kept == 0 || kept == n {
		return t, "", false
	}
	b.WriteByte(']')
	b.WriteString(t[best.end:])
	of := plural(n, "items") + " of the top-level array"
	if best.path != "" {
		of = plural(n, "items") + " of " + best.path
	}
	return b.String(), intentNote(kept, of, terms), true
}

// walkArrays calls fn with the bounds and key path of every array of two or
// more items in the JSON document t, down to maxArrayDep levels.
func walkArrays(t string, fn func(start, end int, path []string)) {
	var path []string
	var walk func(base, depth int, v string)
	walk = func(base, depth int, v string) {
		if depth > maxArrayDep || (v[0] != '{' && v[0] != '[') {
			return
		}
		if v[0] == '{' {
			for i := jsontext.FirstEntry(v); i >= 0; {
				k, start, end := jsontext.ScanMember(v, i)
				path = append(path, jsontext.DecodeString(k))
				walk(base+start, depth+1, v[start:end])
				path = path[:len(path)-1]
				i = jsontext.NextEntry(v, end)
			}
			return
		}
		n := 0
		for i := jsontext.FirstEntry(v); i >= 0; n++ {
			end := jsontext.ValueEnd(v, i)
			path = append(path, "["+strconv.Itoa(n)+"]")
			walk(base+i, depth+1, v[i:end])
			path = path[:len(path)-1]
			i = jsontext.NextEntry(v, end)
		}
		if n >= 2 {
			fn(base, base+len(v), path)
		}
	}
	walk(0, 0, t)
}

// appendValues appends the scalar values in v, space separated: the text an
// item is matched on.
func appendValues(dst []byte, v string, depth int) []byte {
	switch {
	case v[0] == '{' && depth < maxArrayDep:
		for _, m := range jsontext.Members(v) {
			dst = appendValues(dst, m, depth+1)
		}
	case v[0] == '[' && depth < maxArrayDep:
		for e := range jsontext.Elements(v) {
			dst = appendValues(dst, e, depth+1)
		}
	case v[0] == '"':
		dst = append(dst, jsontext.DecodeString(v)...)
		dst = append(dst, ' ')
	case v[0] != '{' && v[0] != '[':
		dst = append(dst, v...)
		dst = append(dst, ' ')
	}
	return dst
}
