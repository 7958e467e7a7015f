package search

import (
	"unicode"
	"unicode/utf8"
)

// stopWords is Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
var stopWords = map[string]struct{}{
	"a": {}, "an": {}, "and": {}, "are": {}, "as": {}, "at": {}, "be": {}, "but": {}, "by": {},
	"for": {}, "if": {}, "in": {}, "into": {}, "is": {}, "it": {}, "no": {}, "not": {}, "of": {},
	"on": {}, "or": {}, "such": {}, "that": {}, "the": {}, "their": {}, "then": {}, "there": {},
	"these": {}, "they": {}, "this": {}, "to": {}, "was": {}, "will": {}, "with": {},
}

// queryStopWords are dropped from queries when Config.QueryStop is set.
// Task-style queries are requests addressed to someone ("I'm planning a
// trip, can you help me find ..."): their pronouns, the endings the
// tokenizer splits from contractions (I'm, Apple's, we'll) and request
// verbs carry no tool's meaning, yet tool texts use them often enough to
// score. Tools keep them, so the frozen postings do not change. On
// kiln-gen eval this lifts nDCG@5 by 0.016 on LiveMCPBench (9 queries better,
// 3 worse) and 0.012 on ToolBench (104 better, 51 worse); NLTK's 179-word
// English list in their place measures the same within 0.002.
var queryStopWords = map[string]struct{}{
	"i": {}, "me": {}, "my": {}, "we": {}, "us": {}, "our": {}, "you": {}, "your": {},
	"m": {}, "s": {}, "t": {}, "d": {}, "ll": {}, "ve": {}, "re": {},
	"please": {}, "help": {}, "want": {}, "would": {}, "like": {}, "could": {}, "can": {},
	"should": {}, "also": {}, "some": {}, "any": {},
}

// tokenizer turns text into index terms. It reuses one buffer, so a
// tokenizer belongs to one goroutine; the token handed to emit is valid only
// during the call.
type tokenizer struct {
	cfg *Config
	buf []byte
	cjk []rune
	// With keepSurface set, surface holds the lower-cased, unstemmed form of the
	// token being emitted: try-also shows words, not stems.
	keepSurface bool
	surface     []byte
	// queryStop also drops queryStopWords.
	queryStop bool
}

// isCJK reports runes of scripts written without spaces between words. The
// prolonged sound mark (U+30FC) is in the Common script but only ever
// appears inside katakana words.
func isCJK(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) || r == 0x30FC)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// each calls emit for every term of s, in order, duplicates included.
func (t *tokenizer) each(s string, emit func([]byte)) {
	start := -1 // start of the current non-CJK word
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z' || r >= '0' && r <= '9'):
			if start < 0 {
				start = i
			}
		case r >= utf8.RuneSelf && isCJK(r):
			if start >= 0 {
				t.word(s[start:i], emit)
				start = -1
			}
			t.cjk = append(t.cjk[:0], r)
			i += n
			for i < len(s) {
				r, n = utf8.DecodeRuneInString(s[i:])
				if !isCJK(r) {
					break
				}
				t.cjk = append(t.cjk, r)
				i += n
			}
			t.emitCJK(emit)
			continue
		case r >= utf8.RuneSelf && isWordRune(r):
			if start < 0 {
				start = i
			}
		default:
			if start >= 0 {
				t.word(s[start:i], emit)
				start = -1
			}
		}
		i += n
	}
	if start >= 0 {
		t.word(s[start:], emit)
	}
}

func (t *tokenizer) emitCJK(emit func([]byte)) {
	rs := t.cjk
	if t.cfg.CJK != CJKBigram || len(rs) == 1 {
		for _, r := range rs {
			t.buf = utf8.AppendRune(t.buf[:0], r)
			t.emitCJKToken(emit)
		}
	}
	if t.cfg.CJK == CJKUnigram {
		return
	}
	for i := 0; i+1 < len(rs); i++ {
		t.buf = utf8.AppendRune(t.buf[:0], rs[i])
		t.buf = utf8.AppendRune(t.buf, rs[i+1])
		t.emitCJKToken(emit)
	}
}

func (t *tokenizer) emitCJKToken(emit func([]byte)) {
	if t.keepSurface {
		t.surface = append(t.surface[:0], t.buf...)
	}
	emit(t.buf)
}

// word splits one run of letters and digits at camelCase boundaries:
// "getHTTPResponse" → get, http, response.
func (t *tokenizer) word(w string, emit func([]byte)) {
	start := 0
	var prev rune = -1
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRuneInString(w[i:])
		if i > 0 && t.boundary(w, i, n, prev, r) {
			t.piece(w[start:i], emit)
			start = i
		}
		prev = r
		i += n
	}
	t.piece(w[start:], emit)
}

func (t *tokenizer) boundary(w string, i, n int, prev, r rune) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	if unicode.IsLower(prev) || t.cfg.SplitDigitUpper && unicode.IsDigit(prev) {
		return true
	}
	if !unicode.IsUpper(prev) || i+n >= len(w) {
		return false
	}
	next, m := utf8.DecodeRuneInString(w[i+n:])
	if !unicode.IsLower(next) {
		return false
	}
	// "IDs", "URLs": an acronym's plural, not an acronym followed by "Ds".
	return !(t.cfg.AcronymPlural && next == 's' && i+n+m == len(w))
}

func (t *tokenizer) piece(p string, emit func([]byte)) {
	b := t.buf[:0]
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		b = utf8.AppendRune(b, unicode.ToLower(r))
		i += n
	}
	t.buf = b
	if _, stop := stopWords[string(b)]; stop {
		return
	}
	if t.queryStop {
		if _, stop := queryStopWords[string(b)]; stop {
			return
		}
	}
	if t.keepSurface {
		// The stemmers rewrite b in place.
		t.surface = append(t.surface[:0], b...)
	}
	switch t.cfg.Stem {
	case StemPlural:
		b = stemPlural(b)
	case StemPorter:
		b = stemPorter(b)
	case StemLight:
		b = stemLight(b)
	}
	emit(b)
}
