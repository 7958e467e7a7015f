package semantic

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"

	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/textcut"
)

// maxEmbedBytes bounds the part of a query that is embedded. Sentence
// models read 256 to 512 tokens (about 1 to 2 KiB of English) and the shim
// drops the rest, so tokenizing all of search.MaxQueryBytes would cost time
// for nothing.
const maxEmbedBytes = 8 << 10

// Searcher ranks tools by fusing two rankings with Reciprocal Rank Fusion:
// the lexical index's tiers and the tools whose vectors are nearest to the
// query's embedding. Compiled tools use the vectors frozen at emit time;
// tools added with With are embedded then, so a query embeds only itself.
//
// Lifecycle: Open the Embedder and Load the vectors → NewSearcher →
// Search, TryAlso and With from any goroutine → close the Embedder once no
// Searcher derived from it is in use. A Searcher is immutable: With
// returns a new one sharing the frozen vectors.
type Searcher struct {
	lex  *search.Index
	emb  Embedder
	dim  int
	base *Vectors
	// baseInv holds 1/‖row‖ per base row (0 for a zero row), so a query
	// costs one dot product per tool.
	baseInv []float32
	// skip marks base rows the lexical index no longer lists (their
	// backend was removed or replaced at run time) or that an overlay row
	// supersedes.
	skip []bool
	over []overlayRow
	log  *slog.Logger
	fuse SearcherOptions
	// row maps a base ID to its row, for the cosine of a lexical candidate.
	row     map[string]int
	overIdx map[string]int // overlay ID → index in over
}

// overlayRow is the vector of one tool added at run time.
type overlayRow struct {
	id, backend, text string
	vec               []float32
	inv               float32
}

// SearcherOptions tunes NewSearcher.
type SearcherOptions struct {
	// Logger receives embedding failures at query and registration time,
	// where the search degrades to the lexical ranking for that query or
	// tool; nil discards them.
	Logger *slog.Logger
	// Fusion is how the two rankings merge: FuseRRF (the zero value) for
	// a sentence model; the static word-vector tier measured best with
	// FuseRerank (see Fusion).
	Fusion Fusion
	// Weight is the cosine's weight for FuseLinear and FuseRerank, against
	// a lexical score normalised to 1 at the best hit; 0 means
	// DefaultWeight.
	Weight float64
	// Depth is how many lexical hits FuseRerank reorders; 0 means
	// DefaultDepth.
	Depth int
}

// NewSearcher fuses lex, the compiled index, with v, the vectors frozen
// from the same tools, embedding queries with e. It fails with ErrStale
// when v and lex do not hold the same tools (generated/ was emitted twice
// without regenerating both), and with ErrModelMismatch when e's vectors
// do not have v's dimension; the caller has already checked the model's
// sha256 with v.Check.
func NewSearcher(lex *search.Index, v *Vectors, e Embedder, opts SearcherOptions) (*Searcher, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	probe, err := e.Embed("kiln")
	if err != nil {
		return nil, fmt.Errorf("semantic searcher: %w", err)
	}
	if len(v.IDs) > 0 && len(probe) != v.Dim {
		return nil, fmt.Errorf("%w: the model returns %d dimensions but the frozen vectors have %d: regenerate them with this model",
			ErrModelMismatch, len(probe), v.Dim)
	}
	if err := sameTools(lex, v); err != nil {
		return nil, err
	}
	s := &Searcher{lex: lex, emb: e, dim: len(probe), base: v, baseInv: make([]float32, len(v.IDs)),
		skip: make([]bool, len(v.IDs)), log: opts.Logger, fuse: opts, row: make(map[string]int, len(v.IDs))}
	if s.fuse.Weight <= 0 {
		s.fuse.Weight = DefaultWeight
	}
	if s.fuse.Depth <= 0 {
		s.fuse.Depth = DefaultDepth
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for i, id := range v.IDs {
		s.baseInv[i] = invNorm(v.Data[i*v.Dim : (i+1)*v.Dim])
		s.row[id] = i
	}
	return s, nil
}

// sameTools reports ErrStale unless v has one vector per tool lex lists.
func sameTools(lex *search.Index, v *Vectors) error {
	have := make(map[string]bool, len(v.IDs))
	for _, id := range v.IDs {
		have[id] = true
	}
	missing := 0
	example := ""
	for i := range lex.Len() {
		id := lex.Doc(i).ID
		if !have[id] {
			missing++
			example = id
		}
		delete(have, id)
	}
	if missing == 0 && len(have) == 0 {
		return nil
	}
	if missing == 0 {
		for id := range have {
			example = id
			break
		}
	}
	return fmt.Errorf("%w: %d compiled tools have no vector and %d vectors belong to no compiled tool (e.g. %q): "+
		"emit both again from the same manifests (make generate SEMANTIC=1)", ErrStale, missing, len(have), example)
}

// Search returns the best tools for query, best first: the lexical
// ranking and the semantic one, each cut to max(MinCandidates, limit)
// before fusing (RRFK). A hit's Score is its fused score and its Tier the
// lexical tier that found it, or search.TierSemantic for a tool only the
// embedding found. If the query cannot be embedded, the lexical ranking is
// returned and the failure logged.
func (s *Searcher) Search(query string, opts search.Options) []search.Hit {
	limit := opts.Limit
	if limit <= 0 {
		limit = search.DefaultLimit
	}
	n := max(MinCandidates, limit)
	if s.fuse.Fusion == FuseRerank {
		n = max(s.fuse.Depth, limit)
	}
	lex := s.lex.Search(query, search.Options{Limit: n, Boost: opts.Boost})
	text := embedText(query)
	if text == "" || len(lex) == 0 && s.fuse.Fusion == FuseRerank {
		return lex[:min(limit, len(lex))]
	}
	vec, err := s.emb.Embed(text)
	if err == nil && len(vec) != s.dim {
		err = fmt.Errorf("%w: the model returned %d dimensions, want %d", ErrModelMismatch, len(vec), s.dim)
	}
	if err != nil {
		s.log.Warn("semantic search failed; this query is ranked lexically only", "err", err)
		return lex[:min(limit, len(lex))]
	}
	switch s.fuse.Fusion {
	case FuseLinear:
		return linearHits(lex, s.nearest(vec, n, opts.Boost), s.cosines(vec, lex), s.fuse.Weight, limit)
	case FuseRerank:
		return linearHits(lex, nil, s.cosines(vec, lex), s.fuse.Weight, limit)
	}
	return fuseHits(lex, ids(s.nearest(vec, n, opts.Boost)), limit)
}

// TryAlso is the lexical index's TryAlso: suggestions are words, which
// only the lexical side has.
func (s *Searcher) TryAlso(backend, query string, n int) []string {
	return s.lex.TryAlso(backend, query, n)
}

// With returns a Searcher that also finds extra (tools registered at run
// time) and no longer finds the tools of removedBackends, with the same
// replacement rules as search.Index.With: a backend in extra replaces
// every earlier tool of that backend. Extra tools are embedded now, from
// ToolText(name, description), except those an earlier With already
// embedded from the same text; a tool that fails to embed is logged and
// found by the lexical tiers only. s is unchanged.
func (s *Searcher) With(extra []search.Doc, removedBackends ...string) *Searcher {
	out := *s
	out.lex = s.lex.With(extra, removedBackends...)
	gone := map[string]bool{}
	for _, b := range removedBackends {
		gone[b] = true
	}
	for _, d := range extra {
		gone[d.Backend] = true
	}
	known := map[string]*overlayRow{}
	out.over = nil
	for i := range s.over {
		r := &s.over[i]
		known[r.id] = r
		if !gone[r.backend] {
			out.over = append(out.over, *r)
		}
	}
	for _, d := range extra {
		text := ToolText(d.Name, d.Description)
		if r := known[d.ID]; r != nil && r.text == text {
			out.over = append(out.over, overlayRow{id: d.ID, backend: d.Backend, text: text, vec: r.vec, inv: r.inv})
			continue
		}
		vec, err := s.emb.Embed(text)
		if err == nil && len(vec) != s.dim {
			err = fmt.Errorf("%w: the model returned %d dimensions, want %d", ErrModelMismatch, len(vec), s.dim)
		}
		if err != nil {
			s.log.Warn("cannot embed a tool registered at run time; it is found by the lexical tiers only", "tool", d.ID, "err", err)
			continue
		}
		out.over = append(out.over, overlayRow{id: d.ID, backend: d.Backend, text: text, vec: vec, inv: invNorm(vec)})
	}
	inOver := make(map[string]bool, len(out.over))
	out.overIdx = make(map[string]int, len(out.over))
	for i, r := range out.over {
		inOver[r.id] = true
		out.overIdx[r.id] = i
	}
	out.skip = make([]bool, len(s.base.IDs))
	for i, id := range s.base.IDs {
		_, listed := out.lex.DocByID(id)
		out.skip[i] = !listed || inOver[id]
	}
	return &out
}

// nearest returns the k listed tools most similar to q by cosine, best
// first, ties by ID. Only positive similarities count: a tool
// pointing away from the query is no evidence for it. boost, when set,
// multiplies each similarity, as it multiplies lexical scores.
func (s *Searcher) nearest(q []float32, k int, boost func(string) float64) []scored {
	qi := invNorm(q)
	if qi == 0 {
		return nil
	}
	top := make([]scored, 0, k+1)
	consider := func(id string, sim float64) {
		if sim <= 0 {
			return
		}
		if boost != nil {
			sim *= boost(id)
		}
		if len(top) == k && !better(scored{id, sim}, top[k-1]) {
			return
		}
		i := len(top)
		if i == k {
			i--
		} else {
			top = append(top, scored{})
		}
		for ; i > 0 && better(scored{id, sim}, top[i-1]); i-- {
			top[i] = top[i-1]
		}
		top[i] = scored{id, sim}
	}
	d := s.base.Dim
	for i, id := range s.base.IDs {
		if s.skip[i] {
			continue
		}
		consider(id, float64(dot(q, s.base.Data[i*d:(i+1)*d])*qi*s.baseInv[i]))
	}
	for _, r := range s.over {
		consider(r.id, float64(dot(q, r.vec)*qi*r.inv))
	}
	return top
}

func ids(top []scored) []string {
	out := make([]string, len(top))
	for i, c := range top {
		out[i] = c.id
	}
	return out
}

type scored struct {
	id  string
	sim float64
}

func better(a, b scored) bool {
	return a.sim > b.sim || (a.sim == b.sim && a.id < b.id)
}

func dot(a, b []float32) float32 {
	var s float32
	for i, x := range b {
		s += a[i] * x
	}
	return s
}

func invNorm(v []float32) float32 {
	n := math.Sqrt(float64(dot(v, v)))
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0
	}
	return float32(1 / n)
}

// fuseHits fuses the lexical hits with the semantic IDs (Fuse) and returns
// the best limit as hits scored by RRF.
func fuseHits(lex []search.Hit, sem []string, limit int) []search.Hit {
	lexIDs := make([]string, len(lex))
	tier := make(map[string]search.Tier, len(lex))
	score := make(map[string]float64, len(lex)+len(sem))
	for i, h := range lex {
		lexIDs[i] = h.ID
		tier[h.ID] = h.Tier
		score[h.ID] += 1 / float64(RRFK+i+1)
	}
	for i, id := range sem {
		score[id] += 1 / float64(RRFK+i+1)
	}
	ids := Fuse(lexIDs, sem, RRFK)
	out := make([]search.Hit, 0, min(limit, len(ids)))
	for _, id := range ids[:min(limit, len(ids))] {
		t, ok := tier[id]
		if !ok {
			t = search.TierSemantic
		}
		out = append(out, search.Hit{ID: id, Score: score[id], Tier: t})
	}
	return out
}

// embedText trims query and cuts it to maxEmbedBytes on a character
// boundary; "" means there is nothing to embed.
func embedText(query string) string {
	return textcut.Prefix(strings.TrimSpace(query), maxEmbedBytes)
}
