package search

import (
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/jsontext"
)

// impliedStep returns, appended to dst, the query of the step that the
// files and directories a task names imply, and the kinds of value that
// step's tool takes; no path, no step. A task rarely says it wants a file
// tool ("... and save it to /root/notes/x.md", "the audio at
// /root/a.wav"), but the path it names is a value some tool must take. A
// file is written when a verb of writing (writeVerbs) comes before it in
// its sentence, or "to" or "into" right before it ("save the summary to
// x.md"), and read otherwise; the words of its file type follow
// (fileTypes: "write file markdown"). A directory after a verb of writing
// is where a file is written; otherwise it is listed ("list directory").
func impliedStep(dst []byte, query string) ([]byte, Kinds) {
	var k Kinds
	writing, afterTo := false, false
	var buf [16]byte
	for w, ok := nextWord(query, 0); ok; w, ok = nextWord(query, w[1]) {
		raw := query[w[0]:w[1]]
		var lw []byte
		if t := strings.Trim(raw, ",.:;!?\"'()"); len(t) <= len(buf) {
			lw = lowerASCII(buf[:0], t)
		}
		if writeVerbs[string(lw)] {
			writing = true
		}
		ext := ""
		switch valueKind(trimValue(raw), func(e string) { ext = e }) {
		case KindFile:
			verb := "read file "
			if writing || afterTo {
				verb = "write file "
			}
			dst = append(dst, verb...)
			if words := fileTypes[ext]; words != "" {
				dst = append(append(dst, words...), ' ')
			}
			k |= KindFile
		case KindDir:
			if writing {
				dst = append(dst, "write file "...)
				k |= KindFile
			} else {
				dst = append(dst, "list directory "...)
				k |= KindDir
			}
		}
		if c := raw[len(raw)-1]; c == '.' || c == '?' || c == '!' {
			writing = false
		}
		afterTo = string(lw) == "to" || string(lw) == "into"
	}
	return dst, k
}

// writeVerbs are the verbs after which a file a sentence names is written.
var writeVerbs = map[string]bool{
	"save": true, "saved": true, "write": true, "store": true, "export": true, "generate": true,
	"create": true, "draft": true, "make": true, "compose": true, "produce": true, "output": true,
	"put": true,
}

// implied places the best tool for the task's implied step (impliedStep)
// at rank Config.Implied of hits, the task's ranking, unless it ranks
// there or higher already. Only tools taking the step's kind of value
// compete, ranked by the step's words: "write file markdown" finds a
// file writer, not the "save_presentation" that "save" matches. The tool
// takes the score of the hit it displaces, so scores still fall with
// rank. sc is reset as top leaves it.
func (ix *Index) implied(sc *scratch, query string, hits []Hit, limit int, boost func(string) float64) []Hit {
	at := ix.cfg.Implied - 1
	if at < 0 || at >= limit || len(hits) == 0 {
		return hits
	}
	var k Kinds
	sc.ibuf, k = impliedStep(sc.ibuf[:0], query)
	if k == 0 {
		return hits
	}
	g, ok := ix.impliedTool(sc, k, boost)
	if !ok {
		return hits
	}
	id := ix.id(g)
	from := slices.IndexFunc(hits, func(h Hit) bool { return h.ID == id })
	if from >= 0 && from <= at {
		return hits
	}
	if at >= len(hits) {
		// Fewer hits than the rank: it comes last, scored as the last.
		return append(hits, Hit{ID: id, Score: hits[len(hits)-1].Score, Tier: TierBM25})
	}
	h := Hit{ID: id, Score: hits[at].Score, Tier: TierBM25}
	switch {
	case from < 0 && len(hits) == limit:
		from = limit - 1 // the last hit makes room
	case from < 0:
		hits = append(hits, Hit{})
		from = len(hits) - 1
	}
	copy(hits[at+1:from+1], hits[at:from])
	hits[at] = h
	return hits
}

// impliedTool returns the best tool for the step in sc.ibuf among those
// taking a kind of value in k, by the task's own scoring without
// synonyms.
func (ix *Index) impliedTool(sc *scratch, k Kinds, boost func(string) float64) (uint32, bool) {
	// A view, not a copy: queryTerms copies the words it keeps.
	ix.queryTerms(sc, jsontext.StringView(sc.ibuf))
	sc.only = k
	ix.bm25(sc)
	sc.only = 0
	best, bestScore := uint32(0), 0.0
	for _, g := range sc.touched {
		s := sc.score[g]
		sc.score[g] = 0
		if boost != nil {
			s *= boost(ix.id(g))
		}
		if s > bestScore || s == bestScore && s > 0 && ix.id(g) < ix.id(best) {
			best, bestScore = g, s
		}
	}
	sc.touched = sc.touched[:0]
	return best, bestScore > 0
}

// fileWords searches the words of the file types the query's file names
// and paths end in (fileTypes) that the query lacks, each at
// Config.FileWords times its score: "/root/q3.xlsx" also searches "excel
// spreadsheet".
func (ix *Index) fileWords(sc *scratch, query string) {
	if ix.cfg.FileWords == 0 {
		return
	}
	sc.exts = sc.exts[:0]
	scanValues(query, sc.addExt)
	if len(sc.exts) == 0 {
		return
	}
	mark := len(sc.terms)
	for _, e := range sc.exts {
		sc.tok.each(fileTypes[e], func(t []byte) {
			if !sc.hasTerm(string(t), 0) {
				sc.pushTerm(string(t))
			}
		})
	}
	for i := mark; i < len(sc.terms); i++ {
		t := sc.term(i)
		df := ix.df(t)
		if df <= 0 {
			continue
		}
		ix.addTerm(sc, t, ix.cfg.FileWords*idf(ix.liveDocs, df))
	}
	sc.terms = sc.terms[:mark]
}

func (sc *scratch) addExt(e string) {
	for _, x := range sc.exts {
		if x == e {
			return
		}
	}
	sc.exts = append(sc.exts, e)
}
