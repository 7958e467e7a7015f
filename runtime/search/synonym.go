package search

import (
	"math"
	"slices"
)

// synonymGroups are words that API and tool texts use interchangeably for
// one operation or object: the verbs and nouns of tool names ("delete_file",
// "remove_item") and descriptions. Written from the naming conventions of
// common APIs (REST verbs, CRUD, file systems, messaging, media), not from
// any benchmark's queries. Each group is a set of near-synonyms: a query
// word of a group also searches the others (Config.Synonyms).
var synonymGroups = [][]string{
	// verbs
	{"remove", "delete", "erase", "drop", "destroy", "purge", "unlink"},
	{"get", "fetch", "retrieve", "obtain"},
	{"read", "load", "open"},
	{"create", "add", "new", "make", "insert"},
	{"generate", "produce", "make", "create"},
	{"modify", "edit", "update", "change", "alter", "patch"},
	{"find", "search", "query", "lookup", "locate", "seek"},
	{"send", "post", "publish", "submit", "dispatch"},
	{"list", "enumerate"},
	{"show", "display", "view", "render"},
	{"write", "save", "store", "persist"},
	{"run", "execute", "exec", "invoke", "launch"},
	{"stop", "kill", "terminate", "halt", "cancel", "abort"},
	{"start", "begin", "launch", "initialize", "init"},
	{"move", "rename"},
	{"copy", "duplicate", "clone"},
	{"convert", "transform", "export"},
	{"summarize", "summary", "digest", "abstract"},
	{"calculate", "compute", "calc", "evaluate"},
	{"check", "verify", "validate", "test"},
	{"analyze", "analyse", "analysis", "inspect", "examine"},
	{"scrape", "crawl", "extract"},
	{"parse", "extract"},
	{"compress", "zip", "archive"},
	{"login", "signin", "authenticate", "auth"},
	{"browse", "navigate", "visit"},
	{"download", "fetch"},
	{"buy", "purchase", "order"},
	{"schedule", "book", "reserve"},
	{"translate", "translation"},
	{"visualize", "visualise", "plot", "chart", "graph"},
	// nouns
	{"picture", "image", "photo", "photograph", "pic", "img"},
	{"file", "document", "doc"},
	{"repo", "repository"},
	{"directory", "folder", "dir"},
	{"link", "url", "uri", "hyperlink"},
	{"website", "site", "webpage", "page"},
	{"message", "msg"},
	{"email", "mail"},
	{"chart", "graph", "plot", "diagram"},
	{"video", "movie", "film", "clip"},
	{"music", "song", "audio", "sound"},
	{"price", "cost", "fee", "pricing"},
	{"stock", "share", "equity", "ticker"},
	{"calendar", "schedule", "agenda"},
	{"event", "appointment", "meeting"},
	{"issue", "ticket", "bug"},
	{"news", "headline", "headlines"},
	{"paper", "article", "publication"},
	{"spreadsheet", "sheet", "workbook", "excel"},
	{"database", "db"},
	{"record", "entry", "row"},
	{"error", "exception", "failure"},
	{"info", "information", "details", "detail", "metadata"},
	{"settings", "setting", "configuration", "config", "preferences", "options"},
	{"tag", "label"},
	{"note", "memo"},
	{"comment", "reply"},
	{"screenshot", "snapshot", "capture"},
	{"company", "business", "organization", "organisation", "org"},
	{"user", "account", "profile"},
	{"location", "place", "position", "venue", "poi"},
	{"nearby", "near", "around", "surrounding"},
	{"route", "directions", "navigation"},
	{"hotel", "lodging", "accommodation"},
	{"flight", "airline", "plane"},
	{"currency", "forex", "money"},
	{"trending", "popular", "hot", "trend"},
	{"weather", "forecast"},
	{"recipe", "cooking", "dish"},
	{"book", "novel"},
	{"game", "gaming"},
	{"job", "career", "vacancy"},
}

// synonymTerms maps each word of synonymGroups, as cfg tokenizes it, to the
// terms of the other words of its groups.
func synonymTerms(cfg *Config) map[string][]string {
	tk := &tokenizer{cfg: cfg}
	term := func(w string) string {
		var t string
		tk.each(w, func(b []byte) { t = string(b) })
		return t
	}
	out := map[string][]string{}
	for _, g := range synonymGroups {
		ts := make([]string, len(g))
		for i, w := range g {
			ts[i] = term(w)
		}
		for _, a := range ts {
			for _, b := range ts {
				if a != "" && b != "" && a != b && !slices.Contains(out[a], b) {
					out[a] = append(out[a], b)
				}
			}
		}
	}
	return out
}

// synonymStamps reserves one stamp per query word for this query: bm25
// marks with it the tools holding the word, which synonyms then skip.
func (ix *Index) synonymStamps(sc *scratch) {
	if ix.syn == nil {
		return
	}
	n := uint32(sc.unigrams)
	if sc.synStamp > math.MaxUint32-n-1 {
		// Wrapped: old marks could match new stamps.
		clear(sc.synHas)
		sc.synStamp = 0
	}
	sc.synBase = sc.synStamp + 1
	sc.synStamp += n
}

// synonyms scores the synonyms of each query word the query lacks, as
// Lucene's SynonymQuery treats a word and its forms as one concept: a tool
// that holds the word itself gains nothing more, and any other tool gains
// its best synonym's score times Config.Synonyms. Adding every synonym's
// score instead lifts tools that list many of them ("create, add or make")
// and measured worse on ToolBench (nDCG@5 .721 → .719, 20 queries better,
// 31 worse).
func (ix *Index) synonyms(sc *scratch) {
	if ix.syn == nil {
		return
	}
	mark := len(sc.terms)
	for qi := range sc.unigrams {
		syns := ix.syn[string(sc.term(qi))]
		if len(syns) == 0 {
			continue
		}
		stamp := sc.synBase + uint32(qi)
		for _, s := range syns {
			if sc.hasTerm(s, 0) {
				// In the query already, or another word's synonym: one
				// concept counts once.
				continue
			}
			sc.pushTerm(s)
			t := sc.term(len(sc.terms) - 1)
			df := ix.df(t)
			if df <= 0 {
				continue
			}
			w := ix.cfg.Synonyms * idf(ix.liveDocs, df)
			for si, seg := range ix.segs {
				i := seg.tools.find(t)
				if i < 0 {
					continue
				}
				off := ix.docOffset(si)
				for p := seg.tools.postOff[i]; p < seg.tools.postOff[i+1]; p++ {
					g := off + seg.tools.postDoc[p]
					if sc.synHas[g] == stamp || ix.isHidden(g) {
						continue
					}
					v := w * float64(abs32(seg.tools.postW[p]))
					if sc.synBest[g] == 0 {
						sc.synTouch = append(sc.synTouch, g)
					}
					sc.synBest[g] = max(sc.synBest[g], v)
				}
			}
		}
		for _, g := range sc.synTouch {
			sc.add(g, sc.synBest[g])
			sc.synBest[g] = 0
		}
		sc.synTouch = sc.synTouch[:0]
	}
	sc.terms = sc.terms[:mark]
}
