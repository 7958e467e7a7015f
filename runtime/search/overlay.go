package search

import (
	"slices"
	"strings"
)

// With returns an index that also finds extra (tools registered at run time)
// and no longer finds the tools of removedBackends. The frozen base is
// shared, never rebuilt: only the overlay, which holds the run-time tools, is
// indexed again, with the base's corpus averages so that scores stay
// comparable. A backend that appears in extra replaces the base's and any
// earlier overlay's tools of that backend, so no ID is listed twice. ix is
// unchanged; chained calls accumulate.
func (ix *Index) With(extra []Doc, removedBackends ...string) *Index {
	gone := map[string]bool{}
	for _, b := range removedBackends {
		gone[b] = true
	}
	for _, d := range extra {
		gone[d.Backend] = true
	}
	var docs []Doc
	if ix.over != nil {
		for _, d := range ix.over.docs {
			if !gone[d.Backend] {
				docs = append(docs, d)
			}
		}
	}
	docs = append(docs, extra...)
	hidden := slices.Clone(ix.hiddenList)
	for b := range gone {
		if _, ok := slices.BinarySearch(ix.base.backendNames, b); ok {
			hidden = append(hidden, b)
		}
	}
	var over *segment
	if len(docs) > 0 {
		over, _ = buildSegment(docs, &ix.cfg, &ix.st, expandWith(&ix.base.assoc, &ix.base.tools))
	}
	out := newIndex(ix.cfg, ix.st, ix.base, over, hidden)
	out.syn = ix.syn
	if over != nil {
		// After newIndex, so idf counts the base without hidden tools.
		out.suggest(over)
	}
	return out
}

// hide marks the base tools of the given backends, and base tools whose ID
// an overlay tool reuses, as unlisted, and removes their terms from the
// document frequencies so that a removed backend no longer shapes idf.
func (ix *Index) hide(backends []string) {
	slices.Sort(backends)
	backends = slices.Compact(backends)
	ix.hiddenList = backends
	nb := len(ix.base.backendNames)
	ix.liveDocs, ix.liveBacks = ix.numDocs(), ix.numBackends()
	if len(backends) == 0 && ix.over == nil {
		return
	}
	ix.hidden = make([]bool, len(ix.base.docs))
	ix.hiddenB = make([]bool, nb)
	for _, b := range backends {
		if i, ok := slices.BinarySearch(ix.base.backendNames, b); ok {
			ix.hiddenB[i] = true
		}
	}
	if ix.over != nil {
		for _, d := range ix.over.docs {
			if i, ok := slices.BinarySearchFunc(ix.base.docs, d.ID, cmpDocID); ok {
				ix.hidden[i] = true
			}
		}
	}
	tk := &tokenizer{cfg: &ix.cfg}
	ix.hiddenDF, ix.hiddenBDF = map[string]int{}, map[string]int{}
	for i := range ix.base.docs {
		if ix.hiddenB[ix.base.docBackend[i]] {
			ix.hidden[i] = true
		}
		if !ix.hidden[i] {
			continue
		}
		ix.liveDocs--
		for t := range analyze(tk, &ix.cfg, &ix.base.docs[i]).terms {
			ix.hiddenDF[t]++
		}
	}
	for b, h := range ix.hiddenB {
		if !h {
			continue
		}
		ix.liveBacks--
		for t := range ix.backendTerms(tk, b) {
			ix.hiddenBDF[t]++
		}
	}
	ix.liveOrder = make([]uint32, 0, ix.liveDocs)
	for i := range ix.base.docs {
		if !ix.hidden[i] {
			ix.liveOrder = append(ix.liveOrder, uint32(i))
		}
	}
	if ix.over != nil {
		for i := range ix.over.docs {
			ix.liveOrder = append(ix.liveOrder, uint32(len(ix.base.docs)+i))
		}
	}
	slices.SortFunc(ix.liveOrder, func(a, b uint32) int { return strings.Compare(ix.id(a), ix.id(b)) })
}

// backendTerms returns the distinct terms of base backend b's document.
func (ix *Index) backendTerms(tk *tokenizer, b int) map[string]bool {
	out := map[string]bool{}
	add := func(t []byte) { out[string(t)] = true }
	tk.each(ix.base.backendNames[b], add)
	for i := range ix.base.docs {
		if ix.base.docBackend[i] == uint32(b) {
			d := &ix.base.docs[i]
			tk.each(d.Name, add)
			tk.each(d.Title, add)
			tk.each(d.Description, add)
		}
	}
	return out
}

func cmpDocID(d Doc, id string) int { return strings.Compare(d.ID, id) }

// Len is the number of tools the index lists.
func (ix *Index) Len() int { return ix.liveDocs }

// Doc returns the i-th listed tool in ID order, 0 <= i < Len().
func (ix *Index) Doc(i int) Doc {
	if ix.liveOrder == nil {
		return ix.base.docs[i]
	}
	return *ix.doc(ix.liveOrder[i])
}

// DocByID returns a listed tool by its "backend.tool" ID.
func (ix *Index) DocByID(id string) (Doc, bool) {
	if ix.over != nil {
		if i, ok := slices.BinarySearchFunc(ix.over.docs, id, cmpDocID); ok {
			return ix.over.docs[i], true
		}
	}
	if i, ok := slices.BinarySearchFunc(ix.base.docs, id, cmpDocID); ok && !ix.isHidden(uint32(i)) {
		return ix.base.docs[i], true
	}
	return Doc{}, false
}

// Config returns the ranking configuration the index was built with.
func (ix *Index) Config() Config { return ix.cfg }
