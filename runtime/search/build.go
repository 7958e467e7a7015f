package search

import (
	"cmp"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"
)

// Param is one top-level input property of a tool.
type Param struct{ Name, Description string }

// Doc is one tool as the index sees it. ID is "backend.tool".
type Doc struct {
	ID, Backend, Name, Title, Description string
	Params                                []Param
	// Takes is the kinds of literal values the tool's parameters take
	// (Config.Implied); NewDoc reads them from the input schema.
	Takes Kinds
}

// NewDoc builds the Doc of one tool the way kiln-gen emit and kiln-gen eval both
// do, so the evaluated index is the shipped one: ID is backend+"."+name and
// Params are the input schema's top-level properties (name and description)
// sorted by name, and Takes the value kinds of those properties
// (paramKinds). A schema that does not parse contributes no parameters.
func NewDoc(backend, name, title, description string, inputSchema []byte) Doc {
	d := Doc{ID: backend + "." + name, Backend: backend, Name: name, Title: title, Description: description}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &s) != nil {
		return d
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		var p struct {
			Description any `json:"description"`
			Type        any `json:"type"`
		}
		_ = json.Unmarshal(s.Properties[k], &p) // a malformed property keeps its name
		desc, _ := p.Description.(string)
		typ, _ := p.Type.(string)
		d.Params = append(d.Params, Param{Name: k, Description: desc})
		d.Takes |= paramKinds(k, typ)
	}
	return d
}

// table is an inverted index: for each term (sorted, concatenated in terms)
// the documents holding it and the BM25 weight of the pair without its idf,
// which is the only part that depends on the rest of the corpus.
type table struct {
	terms   string
	termOff []uint32 // len = terms+1
	postOff []uint32 // len = terms+1
	postDoc []uint32
	postW   []float32 // after Load, often the frozen data itself: read only
}

func (t *table) numTerms() int { return max(len(t.termOff)-1, 0) }

func (t *table) term(i int) string { return t.terms[t.termOff[i]:t.termOff[i+1]] }

// find returns the index of term b, or -1.
func (t *table) find(b []byte) int {
	lo, hi := 0, t.numTerms()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.term(m) < string(b) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < t.numTerms() && t.term(lo) == string(b) {
		return lo
	}
	return -1
}

// stats are corpus averages fixed when the base index is built. Overlay
// segments reuse them, so a tool scores the same whichever segment holds it.
type stats struct {
	avgLen     float64 // weighted tool length (whole-document normalisation)
	fieldAvg   [numFields]float64
	backendAvg float64 // backend document length
}

// segment is one immutable slice of the corpus: the frozen base, or the
// overlay of tools registered at run time.
type segment struct {
	docs         []Doc      // sorted by ID
	tools        table      // over docs
	exp          table      // over docs: expansion words (Config.Assoc)
	assoc        associates // base only: its words' associates (Config.Assoc)
	backends     table      // over backendNames: one document per backend
	backendNames []string   // sorted
	docBackend   []uint32   // index into backendNames of each doc
	nameWords    []uint8    // distinct words in each doc's name
	takes        []Kinds    // each doc's Takes, packed for Config.Implied's posting walks
	tri          trigrams
	// suggest[suggestOff[b]:suggestOff[b+1]] are backend b's try-also
	// terms, best first (see TryAlso).
	suggest    []suggestion
	suggestOff []uint32
}

// Build indexes docs with DefaultConfig.
func Build(docs []Doc) *Index { return BuildWith(docs, DefaultConfig()) }

// BuildWith indexes docs with cfg. Docs with an ID already seen are dropped,
// so a tool is never listed twice.
func BuildWith(docs []Doc, cfg Config) *Index {
	seg, st := buildSegment(docs, &cfg, nil, nil)
	ix := newIndex(cfg, st, seg, nil, nil)
	if cfg.Synonyms != 0 {
		ix.syn = synonymTerms(&cfg)
	}
	ix.suggest(seg)
	return ix
}

type fieldTF [numFields]float32

type docTerms struct {
	lens  [numFields]float64
	terms map[string]*fieldTF
	exp   map[string]float32 // expansion words' frequencies (Config.Assoc)
}

// buildSegment indexes docs; base supplies the corpus statistics for an
// overlay, nil computes them from docs. An overlay expands its tools with
// expand, the base's associations; the base learns its own from docs.
func buildSegment(in []Doc, cfg *Config, base *stats, expand expandFunc) (*segment, stats) {
	docs := slices.Clone(in)
	slices.SortStableFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	docs = slices.CompactFunc(docs, func(a, b Doc) bool { return a.ID == b.ID })
	seg := &segment{docs: docs}

	tk := &tokenizer{cfg: cfg}
	per := make([]docTerms, len(docs))
	for i := range docs {
		per[i] = analyze(tk, cfg, &docs[i])
	}
	var st stats
	if base != nil {
		st = *base
	} else {
		st = corpusStats(cfg, per)
	}
	var learned map[string][]string
	if base == nil && cfg.Assoc.Terms > 0 && cfg.Assoc.Weight != 0 {
		learned = assocTerms(cfg.Assoc, per)
		expand = expandMap(learned)
	}
	if expand != nil {
		for i := range per {
			expandDoc(&per[i], expand, cfg.Assoc.MaxWords)
			capExp(&per[i], cfg.Assoc.PerTool)
		}
	}
	seg.nameWords = make([]uint8, len(docs))
	seg.takes = make([]Kinds, len(docs))
	for i := range docs {
		seg.takes[i] = docs[i].Takes
	}
	for i := range docs {
		n := 0
		for t, tf := range per[i].terms {
			if tf[FieldName] > 0 && !isPair(t) {
				n++
			}
		}
		seg.nameWords[i] = uint8(min(n, math.MaxUint8))
	}
	seg.tools = buildTable(len(docs), func(i int) map[string]float32 {
		return toolWeights(cfg, &st, &per[i])
	})
	seg.assoc = freezeAssoc(learned, &seg.tools)
	seg.exp = buildTable(len(docs), func(i int) map[string]float32 {
		return expWeights(cfg, &st, &per[i])
	})

	seg.backendNames = make([]string, 0, 8)
	for i := range docs {
		seg.backendNames = append(seg.backendNames, docs[i].Backend)
	}
	slices.Sort(seg.backendNames)
	seg.backendNames = slices.Compact(seg.backendNames)
	seg.docBackend = make([]uint32, len(docs))
	members := make([][]int, len(seg.backendNames))
	for i := range docs {
		b, _ := slices.BinarySearch(seg.backendNames, docs[i].Backend)
		seg.docBackend[i] = uint32(b)
		members[b] = append(members[b], i)
	}
	bdocs := make([]map[string]float32, len(seg.backendNames))
	blens := make([]float64, len(seg.backendNames))
	for b := range seg.backendNames {
		tf := map[string]float32{}
		n := 0
		add := func(tok []byte) { tf[string(tok)]++; n++ }
		tk.each(seg.backendNames[b], add)
		for _, i := range members[b] {
			d := &docs[i]
			tk.each(d.Name, add)
			tk.each(d.Title, add)
			tk.each(d.Description, add)
		}
		bdocs[b], blens[b] = tf, float64(n)
	}
	if base == nil && len(blens) > 0 {
		st.backendAvg = sum(blens) / float64(len(blens))
	}
	seg.backends = buildTable(len(bdocs), func(i int) map[string]float32 {
		norm := cfg.K1 * (1 - cfg.B + cfg.B*blens[i]/nonZero(st.backendAvg))
		for t, f := range bdocs[i] {
			bdocs[i][t] = f * float32(cfg.K1+1) / (f + float32(norm))
		}
		return bdocs[i]
	})
	seg.tri = buildTrigrams(docs)
	return seg, st
}

func analyze(tk *tokenizer, cfg *Config, d *Doc) docTerms {
	dt := docTerms{terms: map[string]*fieldTF{}}
	count := func(f Field, term string) {
		tf := dt.terms[term]
		if tf == nil {
			tf = new(fieldTF)
			dt.terms[term] = tf
		}
		tf[f]++
	}
	var pair []byte
	add := func(f Field, s string) {
		if cfg.Weights[f] == 0 {
			return
		}
		prev := -1
		tk.each(s, func(tok []byte) {
			count(f, string(tok))
			dt.lens[f]++
			if cfg.Bigram == 0 {
				return
			}
			// pair holds the previous token, then " " and this one.
			if prev >= 0 {
				pair = append(append(pair[:prev], ' '), tok...)
				count(f, string(pair))
			}
			pair = append(pair[:0], tok...)
			prev = len(pair)
		})
	}
	add(FieldName, d.Name)
	add(FieldTitle, d.Title)
	add(FieldBackend, d.Backend)
	add(FieldDescription, d.Description)
	for _, p := range d.Params {
		add(FieldParamName, p.Name)
		add(FieldParamDesc, p.Description)
	}
	if cfg.Weights[FieldGloss] != 0 {
		// One word at a time: glosses are not a phrase, so no pairs.
		for _, w := range glossTerms(d) {
			add(FieldGloss, w)
		}
	}
	return dt
}

func corpusStats(cfg *Config, per []docTerms) stats {
	var st stats
	if len(per) == 0 {
		return st
	}
	for i := range per {
		for f := range numFields {
			st.fieldAvg[f] += per[i].lens[f]
			st.avgLen += cfg.Weights[f] * per[i].lens[f]
		}
	}
	n := float64(len(per))
	st.avgLen /= n
	for f := range numFields {
		st.fieldAvg[f] /= n
	}
	return st
}

// toolWeights computes, for each term of one tool, its BM25F weight without
// idf: the saturated, length-normalised, field-weighted term frequency.
func toolWeights(cfg *Config, st *stats, dt *docTerms) map[string]float32 {
	out := make(map[string]float32, len(dt.terms))
	k1 := cfg.K1
	var docNorm float64
	if !cfg.FieldNorm {
		l := 0.0
		for f := range numFields {
			l += cfg.Weights[f] * dt.lens[f]
		}
		docNorm = k1 * (1 - cfg.B + cfg.B*l/nonZero(st.avgLen))
	}
	for t, tf := range dt.terms {
		w := 0.0
		for f := range numFields {
			if tf[f] == 0 {
				continue
			}
			if cfg.FieldNorm {
				b := cfg.FieldB[f]
				w += cfg.Weights[f] * float64(tf[f]) / (1 - b + b*dt.lens[f]/nonZero(st.fieldAvg[f]))
			} else {
				w += cfg.Weights[f] * float64(tf[f])
			}
		}
		if cfg.FieldNorm {
			w = w * (k1 + 1) / (w + k1)
		} else {
			w = w * (k1 + 1) / (w + docNorm)
		}
		if cfg.NameCover != 0 && tf[FieldName] > 0 && !isPair(t) {
			// Weights are positive, so the sign bit is free to flag a
			// word of the tool's name for name coverage.
			w = -w
		}
		out[t] = float32(w)
	}
	return out
}

// isPair reports a bigram term: words never contain a space.
func isPair(t string) bool { return strings.IndexByte(t, ' ') >= 0 }

func nonZero(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// buildTable inverts n documents' term weights.
func buildTable(n int, weights func(i int) map[string]float32) table {
	type posting struct {
		doc uint32
		w   float32
	}
	inv := map[string][]posting{}
	for i := range n {
		for t, w := range weights(i) {
			inv[t] = append(inv[t], posting{uint32(i), w})
		}
	}
	terms := slices.Sorted(maps.Keys(inv))
	var t table
	var sb strings.Builder
	t.termOff = make([]uint32, 0, len(terms)+1)
	t.postOff = make([]uint32, 0, len(terms)+1)
	for _, term := range terms {
		t.termOff = append(t.termOff, uint32(sb.Len()))
		t.postOff = append(t.postOff, uint32(len(t.postDoc)))
		ps := inv[term]
		slices.SortFunc(ps, func(a, b posting) int { return cmp.Compare(a.doc, b.doc) })
		for _, p := range ps {
			t.postDoc = append(t.postDoc, p.doc)
			t.postW = append(t.postW, p.w)
		}
		sb.WriteString(term)
	}
	t.termOff = append(t.termOff, uint32(sb.Len()))
	t.postOff = append(t.postOff, uint32(len(t.postDoc)))
	t.terms = sb.String()
	return t
}

// compactName is the lower-cased letters and digits of a tool name: the
// string trigram matching compares, so "web_search" and "webSearch" agree.
func compactName(dst []rune, s string) []rune {
	for _, r := range s {
		if isWordRune(r) {
			dst = append(dst, unicode.ToLower(r))
		}
	}
	return dst
}
