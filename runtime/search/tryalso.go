package search

import (
	"cmp"
	"slices"
	"unicode"
	"unicode/utf8"
)

// maxSuggest is how many try-also terms each backend keeps: enough that a
// follow-up query naming several of them still leaves some to offer.
const maxSuggest = 12

// suggestStop lists words that descriptions use everywhere but that narrow
// no follow-up query: English function words beyond the tokenizer's 33,
// description boilerplate ("get", "returns", "specified"), and "tool" and
// "mcp", which every catalogue entry is. idf alone does not drop them: a
// gateway often serves only a few backends, where every word is rare.
const suggestStop = "about above across after again against all along also although always among any " +
	"anything around because been before being below between both can cannot could did does " +
	"doing done down during each either else etc even every from further get given had has " +
	"have having here how however its itself just less let like many may mcp might more most " +
	"much must only other otherwise our out over own per provide provided provides rather " +
	"return returned returns same should since some specified still than them those though " +
	"through thus too tool tools under until upon use used uses using very via was were what " +
	"whatever when where whether which while who whom whose why within without would yet you " +
	"your yours"

// suggestion is one try-also term: its index in the segment's tool table
// and the word shown for it, empty when that is the term itself. Load
// makes one per term of every backend; most then hold no pointer for the
// garbage collector to follow.
type suggestion struct {
	term uint32
	word string
}

// TryAlso returns up to n distinctive terms of backend for a follow-up
// query, best first: words that its tools' names and descriptions use
// often and the rest of the index rarely (summed field weight times idf).
// Words of the backend's name, stop words, numbers, words under three
// letters (CJK: pairs seen once) and words of query (compared after
// stemming, as Search does) are left out; each term is shown as the word
// that most often produced it. At most maxSuggest (12) terms exist per
// backend. An unknown or removed backend gives nil.
//
// The candidates are ranked once, by Build for the frozen backends and by
// With for the run-time ones, so a call only filters out the query's
// words; a base backend keeps its build-time ranking after With changes
// the rest of the index.
func (ix *Index) TryAlso(backend, query string, n int) []string {
	seg, list := ix.suggestions(backend)
	if n <= 0 || len(list) == 0 {
		return nil
	}
	if len(query) > MaxQueryBytes {
		query = query[:MaxQueryBytes]
	}
	var asked uint32 // bit i: the query holds list[i].term; Load caps len(list)
	tk := tokenizer{cfg: &ix.cfg}
	tk.each(query, func(t []byte) {
		for i := range list {
			if seg.tools.term(int(list[i].term)) == string(t) {
				asked |= 1 << i
			}
		}
	})
	var out []string
	for i, sg := range list {
		if asked&(1<<i) == 0 {
			out = append(out, cmp.Or(sg.word, seg.tools.term(int(sg.term))))
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// suggestions returns the try-also list of a listed backend and the
// segment whose tool table its terms index.
func (ix *Index) suggestions(backend string) (*segment, []suggestion) {
	if ix.over != nil {
		if b, ok := slices.BinarySearch(ix.over.backendNames, backend); ok {
			return ix.over, ix.over.suggestionsOf(b)
		}
	}
	b, ok := slices.BinarySearch(ix.base.backendNames, backend)
	if !ok || ix.hiddenB != nil && ix.hiddenB[b] {
		return nil, nil
	}
	return ix.base, ix.base.suggestionsOf(b)
}

func (s *segment) suggestionsOf(b int) []suggestion {
	if b+1 >= len(s.suggestOff) {
		return nil
	}
	return s.suggest[s.suggestOff[b]:s.suggestOff[b+1]]
}

// termAcc gathers one term of one backend: the field weight summed over
// the backend's tools (each tool counts once, at its best field) and how
// often each word produced the term.
type termAcc struct {
	sum   float64
	tool  int // the tool cur belongs to
	cur   float64
	words []wordCount
}

type wordCount struct {
	word string
	n    int
}

// suggest ranks the try-also terms of every backend of seg against ix's
// live document frequencies.
func (ix *Index) suggest(seg *segment) {
	tk := &tokenizer{cfg: &ix.cfg, keepSurface: true}
	stop := map[string]bool{}
	tk.each(suggestStop, func(t []byte) { stop[string(t)] = true })

	members := make([][]int, len(seg.backendNames))
	for i, b := range seg.docBackend {
		members[b] = append(members[b], i)
	}
	seg.suggest = seg.suggest[:0]
	seg.suggestOff = make([]uint32, 1, len(seg.backendNames)+1)
	for b, name := range seg.backendNames {
		own := map[string]bool{}
		tk.each(name, func(t []byte) { own[string(t)] = true })
		acc := map[string]*termAcc{}
		for k, i := range members[b] {
			d := &seg.docs[i]
			visit := func(f Field, s string) {
				w := ix.cfg.Weights[f]
				if w <= 0 {
					return
				}
				tk.each(s, func(t []byte) {
					if !showable(tk.surface) || stop[string(t)] || own[string(t)] {
						return
					}
					a := acc[string(t)]
					if a == nil {
						a = &termAcc{tool: -1}
						acc[string(t)] = a
					}
					a.see(k, w, tk.surface)
				})
			}
			visit(FieldName, d.Name)
			visit(FieldTitle, d.Title)
			visit(FieldDescription, d.Description)
			for _, p := range d.Params {
				visit(FieldParamName, p.Name)
				visit(FieldParamDesc, p.Description)
			}
		}
		seg.suggest = append(seg.suggest, ix.rankSuggestions(seg, acc)...)
		seg.suggestOff = append(seg.suggestOff, uint32(len(seg.suggest)))
	}
}

func (a *termAcc) see(tool int, w float64, word []byte) {
	if a.tool != tool {
		a.sum += a.cur
		a.tool, a.cur = tool, 0
	}
	a.cur = max(a.cur, w)
	for i := range a.words {
		if a.words[i].word == string(word) {
			a.words[i].n++
			return
		}
	}
	a.words = append(a.words, wordCount{string(word), 1})
}

func (a *termAcc) seen() int {
	n := 0
	for _, w := range a.words {
		n += w.n
	}
	return n
}

// rankSuggestions keeps the best maxSuggest terms of one backend, ties
// broken by term so that Build stays deterministic.
func (ix *Index) rankSuggestions(seg *segment, acc map[string]*termAcc) []suggestion {
	type scored struct {
		suggestion
		score float64
	}
	var all []scored
	for t, a := range acc {
		df := ix.df([]byte(t))
		// A term outside seg's own table could not be frozen; every shown
		// field is indexed, so this only guards that invariant.
		ti := seg.tools.find([]byte(t))
		if df <= 0 || ti < 0 {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(t); isCJK(r) && a.seen() < 2 {
			// Most CJK pairs seen once straddle two words ("此接" of
			// "此接口"); a pair that recurs is more likely a word.
			continue
		}
		w := slices.MaxFunc(a.words, func(x, y wordCount) int {
			// Most frequent, then the lexically first: "file" over "files".
			return cmp.Or(cmp.Compare(x.n, y.n), cmp.Compare(y.word, x.word))
		})
		sg := suggestion{term: uint32(ti)}
		if w.word != t {
			sg.word = w.word
		}
		all = append(all, scored{sg, (a.sum + a.cur) * idf(ix.liveDocs, df)})
	}
	slices.SortFunc(all, func(x, y scored) int {
		// Terms are sorted in the table, so their indexes compare alike.
		return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.term, y.term))
	})
	out := make([]suggestion, 0, min(len(all), maxSuggest))
	for _, s := range all[:min(len(all), maxSuggest)] {
		out = append(out, s.suggestion)
	}
	return out
}

// df is the number of listed tools holding term t.
func (ix *Index) df(t []byte) int {
	df := -ix.hiddenDF[string(t)]
	for _, seg := range ix.segs {
		if i := seg.tools.find(t); i >= 0 {
			df += int(seg.tools.postOff[i+1] - seg.tools.postOff[i])
		}
	}
	return df
}

// showable reports a word worth suggesting: not a number, and at least
// three letters, or two CJK characters (a CJK bigram is the longest token
// CJKBigram makes).
func showable(word []byte) bool {
	n, digits := 0, 0
	r0, _ := utf8.DecodeRune(word)
	for _, r := range string(word) {
		n++
		if unicode.IsNumber(r) {
			digits++
		}
	}
	if digits == n {
		return false
	}
	return n >= 3 || n == 2 && isCJK(r0)
}
