package search

import (
	"math"
	"runtime"
)

// Tier says which retriever produced a hit.
type Tier uint8

// The tiers, in the order Search tries them.
const (
	TierNone     Tier = iota // no hit
	TierBM25                 // BM25F over names, descriptions and parameters
	TierTrigram              // trigram similarity of a query word to tool names
	TierFuzzy                // BM25 after correcting unknown words by edit distance
	TierSemantic             // reserved for the embedding retriever
)

var tierNames = [...]string{"none", "bm25", "trigram", "fuzzy", "semantic"}

// String returns the tier's lower-case name.
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return "unknown"
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
	Tier  Tier
}

// Options tunes one search.
type Options struct {
	// Limit caps the number of hits; 0 or less means DefaultLimit.
	Limit int
	// Boost returns a multiplier for a tool's score, typically the usage
	// boost 1 + 0.3·ln(1+uses); nil means 1 for every tool. It is called
	// once per matching tool, so it must be cheap and safe for concurrent use.
	Boost func(id string) float64
}

// MaxQueryBytes bounds the part of a query Search reads, and so the
// working memory an idle query buffer keeps; LiveMCPBench's longest task
// (a pasted document) is 18 KiB.
const MaxQueryBytes = 64 << 10

// DefaultLimit is the number of hits Search returns when Options.Limit is 0.
const DefaultLimit = 10

// Index is an immutable search index, safe for concurrent use. It is a
// frozen base segment plus, after With, an overlay of run-time tools that
// may hide base backends.
type Index struct {
	cfg  Config
	st   stats
	base *segment
	over *segment   // nil without run-time tools
	segs []*segment // base, then over if any

	hidden     []bool         // per base doc; nil when nothing is hidden
	hiddenB    []bool         // per base backend
	hiddenList []string       // hidden base backends, sorted
	hiddenDF   map[string]int // tool-table df held by hidden base docs
	hiddenBDF  map[string]int // backend-table df held by hidden base backends
	liveDocs   int            // tools listed
	liveBacks  int            // backends listed
	liveOrder  []uint32       // global numbers of live docs by ID; nil means base only
	// syn maps a query term to its synonyms' terms (Config.Synonyms),
	// frozen with the index so a query expands as it did when measured.
	syn map[string][]string

	// free holds idle per-query scratch. A bounded free list rather than a
	// sync.Pool: the pool drops its contents at every GC, and with 50,000
	// tools a scratch is half a megabyte to allocate again.
	free chan *scratch
}

func newIndex(cfg Config, st stats, base, over *segment, hiddenBackends []string) *Index {
	ix := &Index{cfg: cfg, st: st, base: base, over: over, segs: []*segment{base},
		free: make(chan *scratch, runtime.GOMAXPROCS(0))}
	if over != nil {
		ix.segs = append(ix.segs, over)
	}
	ix.hide(hiddenBackends)
	return ix
}

func (ix *Index) numDocs() int {
	n := len(ix.base.docs)
	if ix.over != nil {
		n += len(ix.over.docs)
	}
	return n
}

func (ix *Index) numBackends() int {
	n := len(ix.base.backendNames)
	if ix.over != nil {
		n += len(ix.over.backendNames)
	}
	return n
}

func (ix *Index) docOffset(seg int) uint32 {
	if seg == 0 {
		return 0
	}
	return uint32(len(ix.base.docs))
}

func (ix *Index) backendOffset(seg int) uint32 {
	if seg == 0 {
		return 0
	}
	return uint32(len(ix.base.backendNames))
}

// locate maps a global doc number to its segment and local number.
func (ix *Index) locate(g uint32) (*segment, uint32) {
	if n := uint32(len(ix.base.docs)); g >= n {
		return ix.over, g - n
	}
	return ix.base, g
}

func (ix *Index) doc(g uint32) *Doc {
	s, l := ix.locate(g)
	return &s.docs[l]
}

func (ix *Index) id(g uint32) string { return ix.doc(g).ID }

func (ix *Index) isHidden(g uint32) bool {
	return ix.hidden != nil && int(g) < len(ix.hidden) && ix.hidden[g]
}

// scratch is the per-query working memory, kept per Index so that a query
// allocates only its result slice.
type scratch struct {
	tok      tokenizer
	tbuf     []byte
	terms    [][2]int32 // query terms as ranges of tbuf: words, then pairs
	unigrams int        // terms[:unigrams] are single words
	pairs    [][2]int32 // adjacent query words, as indexes into terms
	fb       []cand     // feedback docs, best first
	fbTerms  map[uint32]float64
	fbList   []fbTerm
	score    []float64 // per global doc
	touched  []uint32
	bscore   []float64 // per global backend
	btouched []uint32
	count    []uint16 // tier 2 trigram counts per global doc
	nameHits []uint8
	hits     []uint32
	heap     []cand
	runes    []rune
	qtri     []uint64
	lev      [3][]int
	synHas   []uint32  // per global doc: the stamp of the last query word it holds
	synStamp uint32    // the last stamp used
	synBase  uint32    // query word i's stamp is synBase+i
	synBest  []float64 // per global doc: its best synonym score for one query word
	synTouch []uint32
	exts     []string // file extensions the query names (Config.FileWords)
	ibuf     []byte   // the implied step's query (Config.Implied)
	only     Kinds    // when set, only tools taking one of these kinds score
}

func (ix *Index) putScratch(sc *scratch) {
	select {
	case ix.free <- sc:
	default: // more concurrent queries than CPUs: let this one go
	}
}

func (ix *Index) getScratch() *scratch {
	select {
	case sc := <-ix.free:
		return sc
	default:
	}
	sc := &scratch{
		tok:      tokenizer{cfg: &ix.cfg},
		score:    make([]float64, ix.numDocs()),
		bscore:   make([]float64, ix.numBackends()),
		count:    make([]uint16, ix.numDocs()),
		nameHits: make([]uint8, ix.numDocs()),
	}
	if ix.syn != nil {
		sc.synHas = make([]uint32, ix.numDocs())
		sc.synBest = make([]float64, ix.numDocs())
	}
	return sc
}

func (sc *scratch) term(i int) []byte { r := sc.terms[i]; return sc.tbuf[r[0]:r[1]] }

func (sc *scratch) hasTerm(t string, from int) bool {
	for i := from; i < len(sc.terms); i++ {
		if string(sc.term(i)) == t {
			return true
		}
	}
	return false
}

func (sc *scratch) pushTerm(t string) {
	start := len(sc.tbuf)
	sc.tbuf = append(sc.tbuf, t...)
	sc.terms = append(sc.terms, [2]int32{int32(start), int32(len(sc.tbuf))})
}

// add accumulates into a doc's score, remembering which docs to rank and
// reset.
func (sc *scratch) add(g uint32, s float64) {
	if sc.score[g] == 0 {
		sc.touched = append(sc.touched, g)
	}
	sc.score[g] += s
}

// Search returns the best tools for query, best first. Tier 1 (BM25F) runs
// first; tier 2 (trigrams) only if tier 1 found nothing, tier 3 (typo
// correction) only if tiers 1 and 2 found nothing. Equal scores rank by ID.
func (ix *Index) Search(query string, opts Options) []Hit {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(query) > MaxQueryBytes {
		query = query[:MaxQueryBytes]
	}
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	ix.queryTerms(sc, query)
	ix.bm25(sc)
	ix.synonyms(sc)
	ix.fileWords(sc, query)
	ix.feedback(sc)
	if len(sc.touched) > 0 {
		hits := ix.top(sc, TierBM25, limit, opts.Boost)
		return ix.implied(sc, query, hits, limit, opts.Boost)
	}
	ix.trigramTier(sc, query)
	if len(sc.touched) > 0 {
		return ix.top(sc, TierTrigram, limit, opts.Boost)
	}
	ix.typoTier(sc)
	return ix.top(sc, TierFuzzy, limit, opts.Boost)
}

// queryTerms tokenizes query into sc.terms, without duplicates, followed
// by its adjacent pairs when the index has them.
func (ix *Index) queryTerms(sc *scratch, query string) {
	sc.tok.queryStop = ix.cfg.QueryStop
	ix.queryWords(sc, query)
	if len(sc.terms) == 0 && sc.tok.queryStop {
		// "help me", "can you": words that only address someone are all
		// the query has, so they are what it asks for.
		sc.tok.queryStop = false
		ix.queryWords(sc, query)
	}
	sc.tok.queryStop = false
	sc.unigrams = len(sc.terms)
	for _, p := range sc.pairs {
		a, b := sc.term(int(p[0])), sc.term(int(p[1]))
		start := len(sc.tbuf)
		sc.tbuf = append(append(append(sc.tbuf, a...), ' '), b...)
		if sc.indexTerm(sc.tbuf[start:]) >= 0 {
			sc.tbuf = sc.tbuf[:start]
			continue
		}
		sc.terms = append(sc.terms, [2]int32{int32(start), int32(len(sc.tbuf))})
	}
}

// queryWords tokenizes query into sc.terms, distinct words only, and
// records adjacent words in sc.pairs when the index has pairs.
func (ix *Index) queryWords(sc *scratch, query string) {
	sc.tbuf, sc.terms, sc.pairs = sc.tbuf[:0], sc.terms[:0], sc.pairs[:0]
	prev := -1
	sc.tok.each(query, func(t []byte) {
		// A repeated word pairs with its first occurrence: the pair must
		// name a term that exists, or a query ending in a repeat reads
		// past sc.terms.
		i := sc.indexTerm(t)
		if i < 0 {
			i = len(sc.terms)
			start := len(sc.tbuf)
			sc.tbuf = append(sc.tbuf, t...)
			sc.terms = append(sc.terms, [2]int32{int32(start), int32(len(sc.tbuf))})
		}
		if ix.cfg.Bigram != 0 && prev >= 0 {
			sc.pairs = append(sc.pairs, [2]int32{int32(prev), int32(i)})
		}
		prev = i
	})
}

func (sc *scratch) indexTerm(t []byte) int {
	for i := range sc.terms {
		if string(sc.term(i)) == string(t) {
			return i
		}
	}
	return -1
}

// idf is Lucene's BM25 idf, which stays positive for terms in over half the
// corpus.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// bm25 scores sc.terms into sc.score: BM25F of the tool plus BackendWeight
// times BM25 of its backend document.
func (ix *Index) bm25(sc *scratch) {
	segs := ix.segs
	useB := ix.cfg.BackendWeight != 0
	ix.synonymStamps(sc)
	for qi := range sc.terms {
		t := sc.term(qi)
		// A word with synonyms marks the tools holding it (see synonyms).
		var stamp uint32
		if ix.syn != nil && qi < sc.unigrams && len(ix.syn[string(t)]) > 0 {
			stamp = sc.synBase + uint32(qi)
		}
		idx := [2]int{-1, -1}
		df, bdf := -ix.hiddenDF[string(t)], -ix.hiddenBDF[string(t)]
		for si, seg := range segs {
			idx[si] = seg.tools.find(t)
			if idx[si] >= 0 {
				df += int(seg.tools.postOff[idx[si]+1] - seg.tools.postOff[idx[si]])
			}
			if useB {
				if bi := seg.backends.find(t); bi >= 0 {
					bdf += int(seg.backends.postOff[bi+1] - seg.backends.postOff[bi])
				}
			}
		}
		if df <= 0 {
			continue
		}
		w := idf(ix.liveDocs, df)
		if qi >= sc.unigrams {
			w *= ix.cfg.Bigram
		}
		for si, seg := range segs {
			if idx[si] < 0 {
				continue
			}
			off := ix.docOffset(si)
			lo, hi := seg.tools.postOff[idx[si]], seg.tools.postOff[idx[si]+1]
			for p := lo; p < hi; p++ {
				l := seg.tools.postDoc[p]
				g := off + l
				if sc.only != 0 && seg.takes[l]&sc.only == 0 {
					continue
				}
				if !ix.isHidden(g) {
					if stamp != 0 {
						sc.synHas[g] = stamp
					}
					pw := seg.tools.postW[p]
					if pw < 0 {
						pw = -pw
						if sc.nameHits[g] < math.MaxUint8 {
							sc.nameHits[g]++
						}
					}
					sc.add(g, w*float64(pw))
				}
			}
		}
		if qi < sc.unigrams {
			ix.expTerm(sc, t, w)
		}
		if useB && bdf > 0 && qi < sc.unigrams {
			ix.backendTerm(sc, t, idf(ix.liveBacks, bdf))
		}
	}
	if ix.cfg.NameCover != 0 {
		for _, g := range sc.touched {
			seg, l := ix.locate(g)
			if n := seg.nameWords[l]; n > 0 {
				sc.score[g] *= 1 + ix.cfg.NameCover*float64(sc.nameHits[g])/float64(n)
			}
			sc.nameHits[g] = 0
		}
	}
	if !useB {
		return
	}
	for _, g := range sc.touched {
		sc.score[g] += ix.cfg.BackendWeight * sc.bscore[ix.backendOf(g)]
	}
	for _, b := range sc.btouched {
		sc.bscore[b] = 0
	}
	sc.btouched = sc.btouched[:0]
}

func (ix *Index) backendTerm(sc *scratch, t []byte, w float64) {
	for si, seg := range ix.segs {
		bi := seg.backends.find(t)
		if bi < 0 {
			continue
		}
		off := ix.backendOffset(si)
		lo, hi := seg.backends.postOff[bi], seg.backends.postOff[bi+1]
		for p := lo; p < hi; p++ {
			b := off + seg.backends.postDoc[p]
			if si == 0 && ix.hiddenB != nil && ix.hiddenB[b] {
				continue
			}
			if sc.bscore[b] == 0 {
				sc.btouched = append(sc.btouched, b)
			}
			sc.bscore[b] += w * float64(seg.backends.postW[p])
		}
	}
}

func (ix *Index) backendOf(g uint32) uint32 {
	if n := uint32(len(ix.base.docs)); g >= n {
		return uint32(len(ix.base.backendNames)) + ix.over.docBackend[g-n]
	}
	return ix.base.docBackend[g]
}

// top applies the boost, selects the best limit docs and resets sc. No hit
// is a nil slice.
func (ix *Index) top(sc *scratch, tier Tier, limit int, boost func(string) float64) []Hit {
	h := ix.selectTop(sc, limit, boost)
	if len(h) == 0 {
		return nil
	}
	out := make([]Hit, len(h))
	for i, c := range h {
		out[i] = Hit{ID: ix.id(c.doc), Score: c.score, Tier: tier}
	}
	return out
}

// selectTop leaves the best n touched docs in sc.heap, best first, and
// resets the accumulators.
func (ix *Index) selectTop(sc *scratch, n int, boost func(string) float64) []cand {
	h := sc.heap[:0]
	for _, g := range sc.touched {
		c := cand{score: sc.score[g], doc: g}
		sc.score[g] = 0
		if boost != nil {
			c.score *= boost(ix.id(g))
		}
		switch {
		case len(h) < n:
			h = append(h, c)
			ix.up(h, len(h)-1)
		case ix.worse(h[0], c):
			h[0] = c
			ix.down(h, 0)
		}
	}
	sc.touched = sc.touched[:0]
	// Pop worst-first into the tail: the slice ends up best first.
	for i := len(h) - 1; i > 0; i-- {
		h[0], h[i] = h[i], h[0]
		ix.down(h[:i], 0)
	}
	sc.heap = h
	return h
}

// up and down maintain a min-heap whose root is the worst candidate kept.
func (ix *Index) up(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !ix.worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (ix *Index) down(h []cand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && ix.worse(h[r], h[l]) {
			m = r
		}
		if !ix.worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
