package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SplitTask returns the steps of a task that asks for several things
// ("Find the repository, then open an issue with the failing test"), or
// nil when it asks for one. A task splits at line breaks, sentence ends,
// semicolons, "then", "after that", "finally" and the like, and at "and"
// or a comma followed by an imperative verb ("... and save it", "...,
// plot it"); list markers and lead words ("First,", "Then") are dropped.
// Only list items and pieces that ask for something are steps: after lead
// words such as "please", "can you" or "I need you to", they start with
// an imperative verb (stepVerbs). Context ("I'm a football fan.", "It's
// for a FinTech app") stays in the task alone, and a piece with fewer than
// two words that a query keeps ("and save it") joins the step before it.
//
// Measured with kiln-gen eval (nDCG@5 LiveMCPBench / ToolBench; the task
// alone .387 / .720), searched by SearchSteps with MergeAnchored 50 deep
// (shipped 20 deep: .386 / .733): requests split at line breaks and
// sentence ends .386 / .733; adding semicolons .386 / .733, "then" and the
// like .388 / .733, "and" + verb .387 / .733, comma + verb .389 / .733
// (shipped; 41 of 94 and 462 of 765 tasks split). Every piece a step,
// requests or not, .382 / .724 (.330-.379 / .574-.681 unanchored). A step
// needing one kept word, or three, instead of two: .389 / .733 and .389 /
// .732.
func SplitTask(task string) []string {
	if len(task) > MaxQueryBytes {
		task = task[:MaxQueryBytes]
	}
	// Each step is kept as its pieces and joined at the end: appending to
	// a string is quadratic when thousands of short pieces join one step.
	var steps [][]string
	pending := ""
	cfg := Config{Stem: StemNone}
	tk := tokenizer{cfg: &cfg, queryStop: true}
	clauses(task, func(c clause) {
		p := c.text
		if !c.listed && !isRequest(p) {
			return
		}
		if pending != "" {
			p, pending = pending+" "+p, ""
		}
		if contentWords(&tk, p) < minStepWords {
			switch {
			case len(steps) > MaxAutoSteps:
				// Joins a step that is dropped anyway.
			case len(steps) > 0:
				steps[len(steps)-1] = append(steps[len(steps)-1], p)
			default:
				pending = p
			}
			return
		}
		if len(steps) <= MaxAutoSteps {
			steps = append(steps, []string{p})
		}
	})
	if pending != "" && len(steps) > 0 {
		steps[len(steps)-1] = append(steps[len(steps)-1], pending)
	}
	if len(steps) < 2 {
		return nil
	}
	out := make([]string, 0, MaxAutoSteps)
	for _, parts := range steps[:min(len(steps), MaxAutoSteps)] {
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// MaxAutoSteps bounds the steps SplitTask returns, and so the searches of
// a task the agent did not split, against a pasted document's dozens of
// sentences; the task still carries the words of the rest. No task of
// either benchmark splits into more than 4 (LiveMCPBench: 27 tasks into
// 2, 9 into 3, 5 into 4); keeping 3 measures .389 / .732, 2 .389 / .728.
const MaxAutoSteps = 4

// minStepWords is the least number of words a query keeps (stop words and
// request words dropped) that a step searches alone: "and save it" is no
// step of its own.
const minStepWords = 2

// clause is one piece of a task; listed marks the first piece of a list
// item, a step however it is worded.
type clause struct {
	text   string
	listed bool
}

// clauses calls emit with each piece of task cut at every cue, trimmed,
// empty pieces skipped.
func clauses(task string, emit func(clause)) {
	for line, rest, more := "", task, true; more; {
		line, rest, more = strings.Cut(rest, "\n")
		line, listed := cutListMarker(line)
		sentences(line, func(s string) {
			splitSemicolons(s, func(p string) {
				splitCues(p, func(c string) {
					if c = trimStep(c); c != "" {
						emit(clause{c, listed})
						listed = false
					}
				})
			})
		})
	}
}

// cutListMarker removes a list item's marker ("- ", "* ", "• ", "1. ",
// "2) ", "(3) ") from the start of line and reports whether it had one.
func cutListMarker(line string) (string, bool) {
	t := strings.TrimLeft(line, " \t")
	for _, b := range []string{"- ", "* ", "• ", "· "} {
		if strings.HasPrefix(t, b) {
			return t[len(b):], true
		}
	}
	i := 0
	if strings.HasPrefix(t, "(") {
		i++
	}
	j := i
	for j < len(t) && j-i < 3 && t[j] >= '0' && t[j] <= '9' {
		j++
	}
	if j > i && j+1 < len(t) && (t[j] == '.' || t[j] == ')') && t[j+1] == ' ' {
		return t[j+2:], true
	}
	return line, false
}

// abbrevs end with a period that does not end a sentence.
var abbrevs = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "vs": true,
	"etc": true, "inc": true, "ltd": true, "co": true, "jr": true, "sr": true, "no": true,
	"e.g": true, "i.e": true, "fig": true, "approx": true, "dept": true, "est": true,
}

// sentences splits s after ".", "!" or "?" (and any closing quote or
// bracket) followed by a space, unless the period ends an abbreviation or
// an initial. A period inside a word ("report.md", "9.5g") ends nothing.
func sentences(s string, emit func(string)) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte(".!?\"')", s[j]) >= 0 {
			j++
		}
		if j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' {
			continue
		}
		if c == '.' && isAbbrev(s[start:i]) {
			continue
		}
		emit(s[start:j])
		start = j
		i = j - 1
	}
	emit(s[start:])
}

// isAbbrev reports whether the word that ends text is an abbreviation, an
// initial or letters between periods ("U.S", "a.m"). A file name
// ("report.md") is none: tasks end sentences with paths.
func isAbbrev(text string) bool {
	// Only the last maxAbbrev bytes are read: a longer word is no
	// abbreviation, and reading all of text at every period was quadratic
	// (64 KB of ".\r" took 9 s).
	if len(text) > maxAbbrev {
		text = text[len(text)-maxAbbrev:]
		if strings.LastIndexAny(text, " \t\r\n(\"'") < 0 {
			return false
		}
	}
	w := lowerWord(text[strings.LastIndexAny(text, " \t\r\n(\"'")+1:])
	if abbrevs[w] {
		return true
	}
	for {
		part, rest, more := strings.Cut(w, ".")
		if utf8.RuneCountInString(part) != 1 {
			return false
		}
		if !more {
			return true
		}
		w = rest
	}
}

// maxAbbrev is the longest word isAbbrev reads, in bytes ("e.g.", "U.S.A.",
// "approx." and initials are short).
const maxAbbrev = 32

// splitSemicolons splits at a semicolon followed by a space; one inside a
// word ("STEINS;GATE") separates nothing.
func splitSemicolons(s string, emit func(string)) {
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ';' && (s[i+1] == ' ' || s[i+1] == '\t') {
			emit(s[start:i])
			start = i + 1
		}
	}
	emit(s[start:])
}

// stepVerbs are imperative verbs that begin a step.
var stepVerbs = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`add analyze analyse apply arrange assess book calculate
		categorize change check choose classify clean collect combine compare compile compose
		compute convert copy count create crop debug delete deploy describe design detect
		determine display download draft draw edit email estimate evaluate explain explore export
		extract fetch fill filter find fix forecast format gather generate get give identify
		import insert install introduce investigate launch list load locate look make map measure
		merge monitor move notify open optimize order organize outline parse pay perform pick plan
		play plot post predict prepare print provide publish pull push query rank read recommend
		record refactor register remind remove rename render reply report research reserve resize
		retrieve review rewrite run save scan schedule scrape search select send set share show
		sort split start stop store submit suggest summarize summarise sync take tell test track
		transcribe transform translate turn update upload validate verify view visualize watch
		write zip`) {
		stepVerbs[v] = true
	}
}

// cueWords start a new step inside a sentence.
var cueWords = map[string]bool{"then": true, "finally": true, "afterwards": true, "lastly": true, "subsequently": true}

// splitCues splits one sentence before "then", "finally", "after that" and
// the like, and before "and" or a comma followed by a step verb. "and
// then" splits before "and".
func splitCues(s string, emit func(string)) {
	start := 0
	prev, ok := nextWord(s, 0)
	if !ok {
		emit(s)
		return
	}
	for {
		w, ok := nextWord(s, prev[1])
		if !ok {
			break
		}
		next, hasNext := nextWord(s, w[1])
		lw := wordAt(s, w)
		pw := s[prev[0]:prev[1]]
		var cut bool
		switch {
		case cueWords[lw]:
			cut = true
		case lw == "after" && hasNext && wordAt(s, next) == "that":
			cut = true
		case lw == "and" && hasNext && stepVerbs[wordAt(s, next)]:
			cut = true
		case strings.HasSuffix(pw, ",") && stepVerbs[lw]:
			cut = true
		}
		if cut {
			at := w[0]
			if lw != "and" && strings.EqualFold(strings.TrimRight(pw, ","), "and") {
				at = prev[0]
			}
			if at > start {
				emit(s[start:at])
				start = at
			}
		}
		prev = w
	}
	emit(s[start:])
}

// wordAt is the word at w, lower-cased, without the punctuation around it.
func wordAt(s string, w [2]int) string {
	return lowerWord(strings.TrimFunc(s[w[0]:w[1]], func(r rune) bool { return !unicode.IsLetter(r) }))
}

// lowerWord is strings.ToLower without an allocation for the lower-case
// ASCII words a splitter mostly meets.
func lowerWord(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// nextWord returns the byte range of the first space-separated word of s
// at or after i, or ok false when there is none.
func nextWord(s string, i int) (w [2]int, ok bool) {
	for i < len(s) && isSpace(s, i) {
		i++
	}
	if i == len(s) {
		return w, false
	}
	j := i
	for j < len(s) && !isSpace(s, j) {
		j++
	}
	return [2]int{i, j}, true
}

func isSpace(s string, i int) bool {
	if c := s[i]; c < utf8.RuneSelf {
		return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

// leadCues open a step and are dropped from it.
var leadCues = []string{"and then", "and", "then", "after that", "afterwards", "afterward", "finally",
	"lastly", "subsequently", "firstly", "first", "secondly", "second", "thirdly", "third"}

// trimStep drops list markers ("-", "*", "1.", "2)"), lead cues and
// surrounding punctuation from a step.
func trimStep(p string) string {
	for {
		p = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(p), "-*•·,;:"))
		i := 0
		for i < len(p) && (p[i] >= '0' && p[i] <= '9' || p[i] == '(') {
			i++
		}
		if i > 0 && i+1 < len(p) && (p[i] == '.' || p[i] == ')') && p[i+1] == ' ' {
			p = p[i+1:]
			continue
		}
		cut := false
		for _, c := range leadCues {
			if len(p) >= len(c) && strings.EqualFold(p[:len(c)], c) && (len(p) == len(c) || p[len(c)] == ' ' || p[len(c)] == ',') {
				p, cut = p[len(c):], true
				break
			}
		}
		if !cut {
			return strings.TrimRight(p, " ,;:.!?")
		}
	}
}

// requestLeads come before a request's verb: "please", "can you", "I
// would like you to", "help me", "also".
var requestLeads = map[string]bool{
	"please": true, "also": true, "and": true, "then": true, "finally": true, "additionally": true,
	"now": true, "kindly": true, "just": true, "can": true, "could": true, "would": true, "will": true,
	"you": true, "help": true, "me": true, "to": true, "i": true, "i'd": true, "want": true, "need": true,
	"like": true, "lastly": true, "next": true, "first": true, "second": true, "third": true, "let": true,
	"us": true, "we": true, "let's": true, "further": true, "furthermore": true, "moreover": true, "plus": true,
	"quickly": true, "simply": true, "go": true, "ahead": true, "try": true,
}

// isRequest reports whether p asks for something: its first word after
// the request leads is a step verb.
func isRequest(p string) bool {
	for w, ok := nextWord(p, 0); ok; w, ok = nextWord(p, w[1]) {
		lw := lowerWord(strings.Trim(p[w[0]:w[1]], ",.:;!?\"'()"))
		if strings.Contains(lw, "’") {
			lw = strings.ReplaceAll(lw, "’", "'")
		}
		if requestLeads[lw] {
			continue
		}
		return stepVerbs[lw]
	}
	return false
}

// contentWords counts the words of p that tk, a query tokenizer, keeps.
func contentWords(tk *tokenizer, p string) int {
	n := 0
	tk.each(p, func([]byte) { n++ })
	return n
}
