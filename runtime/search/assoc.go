package search

import (
	"cmp"
	"math"
	"slices"
)

// Assoc configures document expansion by word associations learned from
// the indexed tools' own texts at build time: each tool also holds, at a
// low weight, the words most associated with its own words in the fleet
// ("forecast" for a tool that says "weather"), so a query in the words of
// a tool's siblings still finds it.
type Assoc struct {
	// Terms is how many associates each word lends; 0 disables expansion.
	Terms int
	// MinTools is the least number of tools two words must share to be
	// associated (and so the least a word must be in).
	MinTools int
	// Weight scales an expansion word's term frequency against a word of
	// the tool's description.
	Weight float64
	// PerTool caps the words one tool gains, keeping those most of its own
	// words lend; 0 keeps all. Uncapped, a 5,000-tool fleet's tools gain
	// 187,000 words (their own postings are 238,000, pairs included) and
	// a query reads about twice the postings; 12 gain 59,000 and rank
	// better.
	PerTool int
	// MaxWords expands only tools that state at most this many distinct
	// words of their own; 0 expands every tool. A tool described at
	// length already holds its siblings' words, and it costs the most
	// postings: at 20, a 5,000-tool fleet gains 49,000 words instead of
	// 59,000, ranking as well or better.
	MaxWords int
}

// associates is the frozen association table, over the base segment's
// tool terms: term i's associates are the terms to[off[i]:off[i+1]], best
// first. Tools registered at run time (With) expand with it too.
type associates struct {
	off []uint32 // len = tool terms + 1, or nil without associations
	to  []uint32
}

// of returns the associates of term t of the base tool table s.
func (a *associates) of(s *table, t string) []uint32 {
	if a.off == nil {
		return nil
	}
	i := s.find([]byte(t))
	if i < 0 {
		return nil
	}
	return a.to[a.off[i]:a.off[i+1]]
}

// expandFunc lists the associates of a word, or nothing.
type expandFunc func(word string, emit func(assoc string))

// ownWord reports a word a tool states itself, which lends it associates
// and which it never gains again by expansion: parameter text is left
// out, as its words (ids, formats, defaults) are mostly plumbing.
func ownWord(t string, tf *fieldTF) bool {
	return !isPair(t) && tf[FieldName]+tf[FieldTitle]+tf[FieldBackend]+tf[FieldDescription]+tf[FieldGloss] > 0
}

// expandDoc gives dt its expansion words, unless it states more than
// maxWords words of its own: for each of its own words, that word's
// associates the tool does not hold, each counted once per word that
// lends it.
func expandDoc(dt *docTerms, expand expandFunc, maxWords int) {
	if maxWords > 0 {
		n := 0
		for t, tf := range dt.terms {
			if ownWord(t, tf) {
				n++
			}
		}
		if n > maxWords {
			return
		}
	}
	for t, tf := range dt.terms {
		if !ownWord(t, tf) {
			continue
		}
		expand(t, func(a string) {
			if dt.terms[a] != nil {
				return
			}
			if dt.exp == nil {
				dt.exp = map[string]float32{}
			}
			dt.exp[a]++
		})
	}
}

// assocTerms finds each word's associates in per, the analysed tools:
// the Terms words sharing the most tools with it beyond chance, by
// Dunning's log-likelihood ratio (G²) over the tools that hold each word.
// G² weighs evidence, not just surprise: pointwise mutual information
// ranks a pair of words seen once together first, and so lends a tool the
// rare words of one sibling.
//
// The cost is the sum over tools of their distinct words squared: with
// it, building a 5,000-tool index takes 0.94 s of CPU instead of 0.60 s.
// A tool of more than maxSourceWords distinct words (a pasted manual, not
// a description) teaches nothing: three tools of 16,000 words took 2.6 s
// to learn from, and one of a megabyte would take minutes of emit.
func assocTerms(ac Assoc, per []docTerms) map[string][]string {
	if ac.Terms <= 0 || len(per) == 0 {
		return nil
	}
	minTools := max(ac.MinTools, 1)
	df := map[string]int{}
	for i := range per {
		for t, tf := range per[i].terms {
			if ownWord(t, tf) {
				df[t]++
			}
		}
	}
	var vocab []string
	for t, n := range df {
		if n >= minTools {
			vocab = append(vocab, t)
		}
	}
	slices.Sort(vocab)
	id := make(map[string]int32, len(vocab))
	for i, t := range vocab {
		id[t] = int32(i)
	}
	docs := make([][]int32, len(per))
	posts := make([][]int32, len(vocab))
	for i := range per {
		for t, tf := range per[i].terms {
			if k, ok := id[t]; ok && ownWord(t, tf) {
				docs[i] = append(docs[i], k)
			}
		}
		if len(docs[i]) > maxSourceWords {
			docs[i] = nil
			continue
		}
		slices.Sort(docs[i])
		for _, k := range docs[i] {
			posts[k] = append(posts[k], int32(i))
		}
	}
	type cand struct {
		t int32
		s float64
	}
	var (
		co      = make([]int32, len(vocab))
		touched []int32
		cands   []cand
		n       = float64(len(per))
		out     = map[string][]string{}
	)
	for a := range vocab {
		for _, d := range posts[a] {
			for _, b := range docs[d] {
				if co[b] == 0 {
					touched = append(touched, b)
				}
				co[b]++
			}
		}
		cands = cands[:0]
		dfa := float64(len(posts[a]))
		for _, b := range touched {
			c := float64(co[b])
			co[b] = 0
			dfb := float64(len(posts[b]))
			// Only attraction: words that meet less often than chance
			// have a large G² too.
			if int(b) == a || int(c) < minTools || c*n <= dfa*dfb {
				continue
			}
			cands = append(cands, cand{b, g2(c, dfa, dfb, n)})
		}
		touched = touched[:0]
		if len(cands) == 0 {
			continue
		}
		slices.SortFunc(cands, func(x, y cand) int {
			if c := cmp.Compare(y.s, x.s); c != 0 {
				return c
			}
			return cmp.Compare(x.t, y.t)
		})
		l := make([]string, min(len(cands), ac.Terms))
		for i := range l {
			l[i] = vocab[cands[i].t]
		}
		out[vocab[a]] = l
	}
	return out
}

// maxSourceWords bounds the distinct words of a tool assocTerms learns
// from; the wordiest tool of the shared datasets has 321, so no measured
// association depends on it.
const maxSourceWords = 1024

func xlogx(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return x * math.Log(x)
}

// g2 is Dunning's log-likelihood ratio of the 2×2 table of n tools: c
// hold both words, a the first, b the second.
func g2(c, a, b, n float64) float64 {
	k11, k12, k21 := c, a-c, b-c
	k22 := n - a - b + c
	return 2 * (xlogx(k11) + xlogx(k12) + xlogx(k21) + xlogx(k22) -
		xlogx(k11+k12) - xlogx(k21+k22) - xlogx(k11+k21) - xlogx(k12+k22) + xlogx(n))
}

// freezeAssoc turns the association map into the table over s's terms.
// Every word and associate is an own word of some tool, so s holds it.
func freezeAssoc(m map[string][]string, s *table) associates {
	if m == nil {
		return associates{}
	}
	a := associates{off: make([]uint32, s.numTerms()+1)}
	for i := range s.numTerms() {
		for _, t := range m[s.term(i)] {
			if j := s.find([]byte(t)); j >= 0 {
				a.to = append(a.to, uint32(j))
			}
		}
		a.off[i+1] = uint32(len(a.to))
	}
	return a
}

// expandWith is the expandFunc of the frozen table a over s.
func expandWith(a *associates, s *table) expandFunc {
	if a.off == nil {
		return nil
	}
	return func(w string, emit func(string)) {
		for _, j := range a.of(s, w) {
			emit(s.term(int(j)))
		}
	}
}

// expandMap is the expandFunc of an association map.
func expandMap(m map[string][]string) expandFunc {
	if m == nil {
		return nil
	}
	return func(w string, emit func(string)) {
		for _, t := range m[w] {
			emit(t)
		}
	}
}

// expWeights is toolWeights for a tool's expansion words: saturated like
// a word of its own, scaled by Assoc.Weight, normalised by the length of
// its own text only.
func expWeights(cfg *Config, st *stats, dt *docTerms) map[string]float32 {
	out := make(map[string]float32, len(dt.exp))
	l := 0.0
	for f := range numFields {
		l += cfg.Weights[f] * dt.lens[f]
	}
	norm := cfg.K1 * (1 - cfg.B + cfg.B*l/nonZero(st.avgLen))
	for t, tf := range dt.exp {
		w := cfg.Assoc.Weight * float64(tf)
		out[t] = float32(w * (cfg.K1 + 1) / (w + norm))
	}
	return out
}

// expTerm adds w times each tool's expansion weight for query word t.
// Tools hold a word or gain it by expansion, never both, and the word's
// idf counts only the tools that hold it, so expansion changes no other
// word's score.
func (ix *Index) expTerm(sc *scratch, t []byte, w float64) {
	for si, seg := range ix.segs {
		i := seg.exp.find(t)
		if i < 0 {
			continue
		}
		off := ix.docOffset(si)
		for p := seg.exp.postOff[i]; p < seg.exp.postOff[i+1]; p++ {
			l := seg.exp.postDoc[p]
			if sc.only != 0 && seg.takes[l]&sc.only == 0 {
				continue
			}
			if g := off + l; !ix.isHidden(g) {
				sc.add(g, w*float64(seg.exp.postW[p]))
			}
		}
	}
}

// capExp keeps dt's n expansion words lent by the most of its own words,
// ties by term.
func capExp(dt *docTerms, n int) {
	if n <= 0 || len(dt.exp) <= n {
		return
	}
	type e struct {
		t string
		c float32
	}
	var l []e
	for t, c := range dt.exp {
		l = append(l, e{t, c})
	}
	slices.SortFunc(l, func(a, b e) int {
		if c := cmp.Compare(b.c, a.c); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	for _, x := range l[n:] {
		delete(dt.exp, x.t)
	}
}
