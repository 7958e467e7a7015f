package search

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// trigrams indexes the distinct character trigrams of each tool's compact
// name for tier 2.
type trigrams struct {
	keys  []uint64 // sorted
	off   []uint32 // len = keys+1
	docs  []uint32
	count []uint16 // distinct trigrams per doc
}

// Runes are below 1<<21, so three fit in a uint64.
func trigramKey(a, b, c rune) uint64 { return uint64(a)<<42 | uint64(b)<<21 | uint64(c) }

// appendTrigrams appends the distinct trigrams of rs, sorted.
func appendTrigrams(dst []uint64, rs []rune) []uint64 {
	start := len(dst)
	for i := 0; i+2 < len(rs); i++ {
		dst = append(dst, trigramKey(rs[i], rs[i+1], rs[i+2]))
	}
	tail := dst[start:]
	slices.Sort(tail)
	return append(dst[:start], slices.Compact(tail)...)
}

func buildTrigrams(docs []Doc) trigrams {
	inv := map[uint64][]uint32{}
	t := trigrams{count: make([]uint16, len(docs))}
	var rs []rune
	var keys []uint64
	for i := range docs {
		rs = compactName(rs[:0], docs[i].Name)
		keys = appendTrigrams(keys[:0], rs)
		t.count[i] = uint16(min(len(keys), 1<<16-1))
		for _, k := range keys {
			inv[k] = append(inv[k], uint32(i))
		}
	}
	t.keys = slices.Sorted(maps.Keys(inv))
	t.off = make([]uint32, 0, len(t.keys)+1)
	for _, k := range t.keys {
		t.off = append(t.off, uint32(len(t.docs)))
		t.docs = append(t.docs, inv[k]...)
	}
	t.off = append(t.off, uint32(len(t.docs)))
	return t
}

func (t *trigrams) find(k uint64) (lo, hi uint32) {
	i, ok := slices.BinarySearch(t.keys, k)
	if !ok {
		return 0, 0
	}
	return t.off[i], t.off[i+1]
}

// minTrigramShare is the share of a query word's trigrams a tool name must
// contain to match in tier 2: "websrch" shares web, ebs, rch (3 of 5) with
// web_search and brave_web_search but only rch with bing_search.
const minTrigramShare = 0.5

// trigramTier scores tools whose compact name shares trigrams with a query
// word. A tool's score is the sum over words of the Jaccard similarity of
// the word's and the name's trigram sets, so tighter names rank first.
func (ix *Index) trigramTier(sc *scratch, query string) {
	for i := 0; i < len(query); {
		j := i
		sc.runes = sc.runes[:0]
		for j < len(query) {
			r, n := utf8.DecodeRuneInString(query[j:])
			if !isWordRune(r) {
				break
			}
			sc.runes = append(sc.runes, unicode.ToLower(r))
			j += n
		}
		if j == i {
			_, n := utf8.DecodeRuneInString(query[i:])
			i += n
			continue
		}
		i = j
		if len(sc.runes) < 3 {
			continue
		}
		sc.qtri = appendTrigrams(sc.qtri[:0], sc.runes)
		ix.trigramWord(sc)
	}
}

func (ix *Index) trigramWord(sc *scratch) {
	q := len(sc.qtri)
	sc.hits = sc.hits[:0]
	for si, seg := range ix.segs {
		off := ix.docOffset(si)
		for _, k := range sc.qtri {
			lo, hi := seg.tri.find(k)
			for _, d := range seg.tri.docs[lo:hi] {
				g := off + d
				if ix.isHidden(g) {
					continue
				}
				if sc.count[g] == 0 {
					sc.hits = append(sc.hits, g)
				}
				sc.count[g]++
			}
		}
	}
	for _, g := range sc.hits {
		c := int(sc.count[g])
		sc.count[g] = 0
		if float64(c) < minTrigramShare*float64(q) {
			continue
		}
		seg, local := ix.locate(g)
		dn := int(seg.tri.count[local])
		sc.add(g, float64(c)/float64(q+dn-c))
	}
}

// typoTier replaces each query word the index does not know by the known
// words nearest to it in edit distance, then ranks with BM25.
func (ix *Index) typoTier(sc *scratch) {
	total := len(sc.terms)
	for qi := range sc.unigrams {
		t := sc.term(qi)
		if !isASCII(t) {
			continue
		}
		maxD := 0
		switch {
		case len(t) >= 8:
			maxD = 2
		case len(t) >= 4:
			maxD = 1
		}
		if maxD == 0 {
			continue
		}
		best := maxD + 1
		mark := len(sc.terms)
		for _, seg := range ix.segs {
			for ti := range seg.tools.numTerms() {
				v := seg.tools.term(ti)
				if abs(len(v)-len(t)) > min(best, maxD) || strings.IndexByte(v, ' ') >= 0 {
					continue
				}
				d := sc.distance(t, v, min(best, maxD))
				if d > maxD {
					continue
				}
				if d < best {
					best = d
					sc.terms = sc.terms[:mark]
				}
				if !sc.hasTerm(v, mark) {
					sc.pushTerm(v)
				}
			}
		}
	}
	corrected := sc.terms[total:]
	if len(corrected) == 0 {
		return
	}
	sc.terms = append(sc.terms[:0], corrected...)
	sc.unigrams = len(sc.terms)
	ix.bm25(sc)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// distance is the optimal-string-alignment distance between a and b
// (Levenshtein plus adjacent transpositions, the commonest typo), or
// bound+1 once it must exceed bound.
func (sc *scratch) distance(a []byte, b string, bound int) int {
	n := len(b)
	for i := range sc.lev {
		sc.lev[i] = slices.Grow(sc.lev[i][:0], n+1)[:n+1]
	}
	pp, p, c := sc.lev[0], sc.lev[1], sc.lev[2]
	for j := range p {
		p[j] = j
	}
	for i := 1; i <= len(a); i++ {
		c[0] = i
		rowMin := i
		for j := 1; j <= n; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(p[j]+1, c[j-1]+1, p[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, pp[j-2]+1)
			}
			c[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > bound {
			return bound + 1
		}
		pp, p, c = p, c, pp
	}
	return min(p[n], bound+1)
}

// cand is a scored tool during top-k selection.
type cand struct {
	score float64
	doc   uint32
}

// worse orders candidates: lower score, then larger ID, is worse.
func (ix *Index) worse(a, b cand) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return cmp.Compare(ix.id(a.doc), ix.id(b.doc)) > 0
}
