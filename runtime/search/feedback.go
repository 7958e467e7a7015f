package search

import (
	"cmp"
	"slices"
)

// fbTerm is a feedback word: its key (see feedbackKey) and weight.
type fbTerm struct {
	key uint32
	w   float64
}

// overBit marks a feedback key that indexes the overlay's term table.
const overBit = 1 << 31

// feedback adds to sc.score the words of the best-ranked tools that the
// query lacks (RM3 without its interpolation: the original query keeps
// weight 1). Each of the Docs best tools lends its name and description
// words in proportion to its share of their summed score and to the word's
// share of its text; the Terms heaviest by that weight times idf are
// searched with the best one at Weight. A task names a tool's purpose in
// its own words ("where to park"); its best matches supply the catalogue's
// words ("parking facilities") for their siblings. On kiln-gen eval: LiveMCPBench
// nDCG@5 +0.010 (12 queries better, 6 worse), ToolBench -0.001 (48 better,
// 50 worse, within noise), with Docs 5, Terms 5, Weight 0.2. It reads the
// feedback tools' text at query time, which at 5,000 tools doubles a
// query's cost, so DefaultConfig leaves it off; a per-tool list of
// distinctive terms frozen at build time would make it cheap.
func (ix *Index) feedback(sc *scratch) {
	fc := ix.cfg.Feedback
	if fc.Docs <= 0 || fc.Terms <= 0 || fc.Weight == 0 || len(sc.touched) == 0 {
		return
	}
	fb := ix.feedbackDocs(sc, fc.Docs)
	total := 0.0
	for _, c := range fb {
		total += c.score
	}
	if total <= 0 {
		return
	}
	if sc.fbTerms == nil {
		sc.fbTerms = map[uint32]float64{}
	}
	for _, c := range fb {
		d := ix.doc(c.doc)
		n := 0
		count := func([]byte) { n++ }
		sc.tok.each(d.Name, count)
		sc.tok.each(d.Description, count)
		if n == 0 {
			continue
		}
		w := c.score / total / float64(n)
		add := func(t []byte) {
			if k, ok := ix.feedbackKey(t); ok && sc.indexTerm(t) < 0 {
				sc.fbTerms[k] += w
			}
		}
		sc.tok.each(d.Name, add)
		sc.tok.each(d.Description, add)
	}
	list := sc.fbList[:0]
	for k, w := range sc.fbTerms {
		if df := ix.df(ix.keyTerm(k)); df > 0 {
			list = append(list, fbTerm{k, w * idf(ix.liveDocs, df)})
		}
	}
	clear(sc.fbTerms)
	// Keys break ties, so map order never shows in the ranking.
	slices.SortFunc(list, func(a, b fbTerm) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	list = list[:min(len(list), fc.Terms)]
	sc.fbList = list
	if len(list) == 0 {
		return
	}
	top := list[0].w
	for _, e := range list {
		t := ix.keyTerm(e.key)
		ix.addTerm(sc, t, fc.Weight*e.w/top*idf(ix.liveDocs, ix.df(t)))
	}
}

// feedbackDocs returns the n best touched docs, best first.
func (ix *Index) feedbackDocs(sc *scratch, n int) []cand {
	fb := sc.fb[:0]
	for _, g := range sc.touched {
		c := cand{score: sc.score[g], doc: g}
		if len(fb) == n {
			if !ix.worse(fb[n-1], c) {
				continue
			}
			fb = fb[:n-1]
		}
		i := len(fb)
		for i > 0 && ix.worse(fb[i-1], c) {
			i--
		}
		fb = slices.Insert(fb, i, c)
	}
	sc.fb = fb
	return fb
}

// feedbackKey names term t by its index in the base term table, or in the
// overlay's with overBit set, so a word is one key whichever segment
// supplied it. Words no tool holds (pairs, hidden tools' words) still
// get a key; df drops them.
func (ix *Index) feedbackKey(t []byte) (uint32, bool) {
	if i := ix.base.tools.find(t); i >= 0 {
		return uint32(i), true
	}
	if ix.over != nil {
		if i := ix.over.tools.find(t); i >= 0 {
			return uint32(i) | overBit, true
		}
	}
	return 0, false
}

func (ix *Index) keyTerm(k uint32) []byte {
	if k&overBit != 0 {
		return []byte(ix.over.tools.term(int(k &^ overBit)))
	}
	return []byte(ix.base.tools.term(int(k)))
}

// addTerm adds w times each listed tool's weight for t to its score.
func (ix *Index) addTerm(sc *scratch, t []byte, w float64) {
	for si, seg := range ix.segs {
		i := seg.tools.find(t)
		if i < 0 {
			continue
		}
		off := ix.docOffset(si)
		for p := seg.tools.postOff[i]; p < seg.tools.postOff[i+1]; p++ {
			if g := off + seg.tools.postDoc[p]; !ix.isHidden(g) {
				// A negative weight only flags a name word.
				sc.add(g, w*float64(abs32(seg.tools.postW[p])))
			}
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
