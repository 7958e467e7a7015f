package semantic

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kilnmcp/kiln/runtime/search"
)

// conceptEmbedder maps synonyms to one axis, so it finds tools whose words
// differ from the query's: what a trained model adds to BM25. It counts
// its calls and fails on the text fail.
type conceptEmbedder struct {
	axes  map[string]int
	dim   int
	fail  string
	calls *atomic.Int64
}

func newConceptEmbedder() conceptEmbedder {
	groups := [][]string{
		{"weather", "forecast", "rain", "umbrella", "temperature"},
		{"email", "mail", "message", "inbox", "letter"},
		{"file", "disk", "read", "contents"},
		{"translate", "language", "french", "german"},
	}
	e := conceptEmbedder{axes: map[string]int{}, dim: len(groups), calls: new(atomic.Int64)}
	for i, g := range groups {
		for _, w := range g {
			e.axes[w] = i
		}
	}
	return e
}

func (e conceptEmbedder) Embed(text string) ([]float32, error) {
	e.calls.Add(1)
	if text == e.fail {
		return nil, errors.New("boom")
	}
	v := make([]float32, e.dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if i, ok := e.axes[w]; ok {
			v[i]++
		}
	}
	return v, nil
}

func (conceptEmbedder) Close() error { return nil }

var searchDocs = []search.Doc{
	search.NewDoc("weather", "get_forecast", "", "Get the forecast for a city.", nil),
	search.NewDoc("mail", "send_email", "", "Send an email message to a recipient.", nil),
	search.NewDoc("fs", "read_file", "", "Read the contents of a file from disk.", nil),
	search.NewDoc("fs", "list_directory", "", "List the entries of a directory.", nil),
	search.NewDoc("notes", "take_note", "", "Write down a note for later.", nil),
}

// frozen builds the index and vectors emit would freeze for docs.
func frozen(t testing.TB, e Embedder, docs []search.Doc) (*search.Index, *Vectors) {
	t.Helper()
	var ids, texts []string
	for _, d := range docs {
		ids = append(ids, d.ID)
		texts = append(texts, ToolText(d.Name, d.Description))
	}
	v, err := BuildVectors(e, ids, texts, "model.gguf", strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	return search.Build(docs), v
}

func newSearcher(t testing.TB, e Embedder, docs []search.Doc, log *slog.Logger) *Searcher {
	t.Helper()
	ix, v := frozen(t, e, docs)
	s, err := NewSearcher(ix, v, e, SearcherOptions{Logger: log})
	if err != nil {
		t.Fatalf("NewSearcher: %v", err)
	}
	return s
}

type searchFunc func(string, search.Options) []search.Hit

// expectHits checks the IDs and tiers of the best limit hits for q.
func expectHits(t *testing.T, search searchFunc, q string, limit int, want ...string) {
	t.Helper()
	var got []string
	for _, h := range search(q, searchOptions(limit)) {
		got = append(got, h.ID+" "+h.Tier.String())
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Search(%q, limit %d) (-want +got):\n%s", q, limit, diff)
	}
}

func searchOptions(limit int) search.Options { return search.Options{Limit: limit} }

func TestSearcherFindsWhatLexicalMisses(t *testing.T) {
	e := newConceptEmbedder()
	s := newSearcher(t, e, searchDocs, nil)
	// "umbrella" and "rain" are in no tool's text: BM25 has nothing, the
	// typo tier offers nothing close, the embedding finds the weather tool.
	expectHits(t, s.lex.Search, "umbrella rain", 3)
	expectHits(t, s.Search, "umbrella rain", 3, "weather.get_forecast semantic")
	// Both agree on the mail tool; the lexical tier is reported.
	expectHits(t, s.Search, "send an email", 1, "mail.send_email bm25")
	// Only "read" matches lexically (fs.read_file); the embedding ranks
	// the mail tool first ("inbox letter") and fs.read_file second. The
	// tool both lists hold wins; the mail tool's 1/61 comes next.
	expectHits(t, s.Search, "read inbox letter", 3, "fs.read_file bm25", "mail.send_email semantic")
	// Blank queries are not embedded.
	calls := e.calls.Load()
	expectHits(t, s.Search, "   ", 3)
	if e.calls.Load() != calls {
		t.Error("a blank query was embedded")
	}
}

// TestSearcherRRF checks the fused list against RRF over the two rankings
// computed independently: the lexical index and cosine over the vectors.
func TestSearcherRRF(t *testing.T) {
	e := newConceptEmbedder()
	s := newSearcher(t, e, searchDocs, nil)
	for _, q := range []string{"read a file", "email the weather forecast", "translate to french", "list disk entries"} {
		var lex []string
		tier := map[string]search.Tier{}
		for _, h := range s.lex.Search(q, searchOptions(MinCandidates)) {
			lex = append(lex, h.ID)
			tier[h.ID] = h.Tier
		}
		qv, _ := e.Embed(q)
		var sem []string
		for _, h := range s.base.Nearest(qv, MinCandidates) {
			if h.Score > 0 {
				sem = append(sem, h.ID)
			}
		}
		want := Fuse(lex, sem, RRFK)
		got := s.Search(q, searchOptions(len(searchDocs)))
		var gotIDs []string
		for i, h := range got {
			gotIDs = append(gotIDs, h.ID)
			wantTier, ok := tier[h.ID]
			if !ok {
				wantTier = search.TierSemantic
			}
			if h.Tier != wantTier {
				t.Errorf("%q: %s has tier %s, want %s", q, h.ID, h.Tier, wantTier)
			}
			if i > 0 && h.Score > got[i-1].Score {
				t.Errorf("%q: scores increase at %d: %v", q, i, got)
			}
		}
		if diff := cmp.Diff(want, gotIDs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q (-want +got):\n%s", q, diff)
		}
	}
}

// fixedEmbedder embeds every text as q.
type fixedEmbedder []float32

func (f fixedEmbedder) Embed(string) ([]float32, error) { return f, nil }
func (fixedEmbedder) Close() error                      { return nil }

// TestSearcherCandidateDepth builds a target ranked 29th lexically and
// 28th semantically, while every other tool ranks in one list's top 30
// only: RRF puts it first only if each side contributes at least 29
// candidates, whatever the limit.
func TestSearcherCandidateDepth(t *testing.T) {
	const n = 60
	name := func(i int) string { return fmt.Sprintf("t%02d", i) }
	var docs []search.Doc
	for i := range n {
		// t00..t34 hold "alpha" less and less often in 40 words: BM25
		// ranks them in order; the rest do not match.
		alpha := max(0, 40-i)
		if i >= 35 {
			alpha = 0
		}
		desc := strings.Repeat("alpha ", alpha) + strings.Repeat("zeta ", 40-alpha)
		docs = append(docs, search.NewDoc("b", name(i), "", desc, nil))
	}
	var order []int
	for i := n - 1; i >= 33; i-- {
		order = append(order, i)
	}
	order = append(order, 28, 32, 31, 30)
	angle := map[int]float64{}
	for p, i := range order {
		angle[i] = 0.01 * float64(p+1)
	}
	v := &Vectors{Model: "m", ModelSHA256: "s", Dim: 2}
	for _, d := range docs {
		a, ok := angle[int(d.Name[1]-'0')*10+int(d.Name[2]-'0')]
		if !ok {
			a = math.Pi // similarity -1: never a candidate
		}
		v.IDs = append(v.IDs, d.ID)
		v.Data = append(v.Data, float32(math.Cos(a)), float32(math.Sin(a)))
	}
	ix := search.Build(docs)
	s, err := NewSearcher(ix, v, fixedEmbedder{1, 0}, SearcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lex := ix.Search("alpha", searchOptions(n))
	if len(lex) != 35 || lex[28].ID != "b.t28" || lex[0].ID != "b.t00" {
		t.Fatalf("precondition: lexical ranking %v, want b.t00..b.t34 in order", lex)
	}
	expectHits(t, s.Search, "alpha", 5, "b.t28 bm25", "b.t00 bm25", "b.t59 semantic", "b.t01 bm25", "b.t58 semantic")
	expectHits(t, s.Search, "alpha", 1, "b.t28 bm25")
}

func TestSearcherWith(t *testing.T) {
	e := newConceptEmbedder()
	s := newSearcher(t, e, searchDocs, nil)
	translate := search.NewDoc("deepl", "translate_text", "", "Translate text into another language.", nil)
	weather2 := search.NewDoc("weather", "hourly", "", "Hourly forecast.", nil)

	calls := e.calls.Load()
	added := s.With([]search.Doc{translate})
	if got := e.calls.Load() - calls; got != 1 {
		t.Errorf("With one tool embedded %d texts, want 1", got)
	}
	// "german" is in no text: only the run-time vector finds it.
	expectHits(t, added.Search, "german", 2, "deepl.translate_text semantic")
	expectHits(t, s.Search, "german", 2) // s is unchanged

	// Replacing the weather backend drops its compiled vector.
	replaced := added.With([]search.Doc{weather2})
	expectHits(t, replaced.Search, "umbrella", 3, "weather.hourly semantic")
	expectHits(t, replaced.Search, "german", 2, "deepl.translate_text semantic")

	// Removing backends drops compiled and run-time vectors alike.
	removed := replaced.With(nil, "weather", "deepl")
	expectHits(t, removed.Search, "umbrella german", 3)

	// Registering the same tool again reuses its vector; a new text is
	// embedded again.
	calls = e.calls.Load()
	again := added.With([]search.Doc{translate})
	if got := e.calls.Load() - calls; got != 0 {
		t.Errorf("re-registering an unchanged tool embedded %d texts, want 0", got)
	}
	expectHits(t, again.Search, "german", 2, "deepl.translate_text semantic")
	changed := translate
	changed.Description = "Send mail."
	calls = e.calls.Load()
	moved := added.With([]search.Doc{changed})
	if got := e.calls.Load() - calls; got != 1 {
		t.Errorf("re-registering a changed tool embedded %d texts, want 1", got)
	}
	expectHits(t, moved.Search, "inbox", 2, "mail.send_email semantic", "deepl.translate_text semantic")

	// A run-time tool reusing a compiled ID supersedes the compiled vector.
	override := search.NewDoc("fs", "read_file", "", "Translate a file into German.", nil)
	over := s.With([]search.Doc{override})
	expectHits(t, over.Search, "french", 3, "fs.read_file semantic")
	for _, h := range over.Search("list directory entries", searchOptions(10)) {
		if h.ID == "fs.list_directory" {
			t.Errorf("the replaced fs backend's tool is still found (%s)", h.Tier)
		}
	}
	if diff := cmp.Diff(s.TryAlso("fs", "x", 3), s.lex.TryAlso("fs", "x", 3)); diff != "" {
		t.Errorf("TryAlso differs from the lexical index's (-searcher +index):\n%s", diff)
	}
}

func TestSearcherEmbedFailures(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e := newConceptEmbedder()
	s := newSearcher(t, e, searchDocs, log)
	e.fail = "send an email"
	s.emb = e
	expectHits(t, s.Search, "send an email", 2, "mail.send_email bm25")
	if !strings.Contains(logs.String(), "ranked lexically only") {
		t.Errorf("a failed query embedding was not logged: %q", logs.String())
	}
	e.fail = ToolText("translate_text", "Into French.")
	s.emb = e
	added := s.With([]search.Doc{search.NewDoc("deepl", "translate_text", "", "Into French.", nil)})
	expectHits(t, added.Search, "translate_text", 1, "deepl.translate_text bm25")
	expectHits(t, added.Search, "german", 1)
	if !strings.Contains(logs.String(), "deepl.translate_text") {
		t.Errorf("a failed tool embedding was not logged: %q", logs.String())
	}
}

func TestNewSearcherErrors(t *testing.T) {
	e := newConceptEmbedder()
	ix, v := frozen(t, e, searchDocs)
	fewer := search.Build(searchDocs[:3])
	more := search.Build(append(searchDocs[:len(searchDocs):len(searchDocs)], search.NewDoc("x", "y", "", "", nil)))
	bad := *v
	bad.Data = bad.Data[1:]
	failing := e
	failing.fail = "kiln"
	tests := []struct {
		name string
		ix   *search.Index
		v    *Vectors
		e    Embedder
		want error
	}{
		{"vector without a tool", fewer, v, e, ErrStale},
		{"tool without a vector", more, v, e, ErrStale},
		{"other dimension", ix, v, wordEmbedder{vocab: []string{"a"}}, ErrModelMismatch},
		{"malformed", ix, &bad, e, ErrFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSearcher(tc.ix, tc.v, tc.e, SearcherOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("NewSearcher: err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := NewSearcher(ix, v, failing, SearcherOptions{}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("NewSearcher with a failing embedder: err = %v", err)
	}
	// No compiled tools: the overlay takes the embedder's dimension.
	empty, err := NewSearcher(search.Build(nil), &Vectors{}, e, SearcherOptions{})
	if err != nil {
		t.Fatalf("NewSearcher without tools: %v", err)
	}
	expectHits(t, empty.With(searchDocs[:1]).Search, "umbrella", 1, "weather.get_forecast semantic")
}

func TestEmbedText(t *testing.T) {
	long := strings.Repeat("é", maxEmbedBytes) // 2 bytes each
	tests := []struct{ in, want string }{
		{"  read a file \n", "read a file"},
		{"\t ", ""},
		{strings.Repeat("a", maxEmbedBytes+10), strings.Repeat("a", maxEmbedBytes)},
		{"a" + long, "a" + strings.Repeat("é", (maxEmbedBytes-1)/2)},
	}
	for _, tc := range tests {
		got := embedText(tc.in)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("embedText(%.20q…) = %d bytes %.20q…, want %d bytes", tc.in, len(got), got, len(tc.want))
		}
	}
}

func TestSearcherBoost(t *testing.T) {
	e := newConceptEmbedder()
	docs := []search.Doc{
		search.NewDoc("a", "one", "", "Forecast.", nil),
		search.NewDoc("b", "two", "", "Forecast.", nil),
	}
	s := newSearcher(t, e, docs, nil)
	boost := func(id string) float64 {
		if id == "b.two" {
			return 2
		}
		return 1
	}
	if got := ids(s.nearest([]float32{1, 0, 0, 0}, 2, nil)); !cmp.Equal(got, []string{"a.one", "b.two"}) {
		t.Errorf("nearest without boost = %v, want ties by ID", got)
	}
	if got := ids(s.nearest([]float32{1, 0, 0, 0}, 2, boost)); !cmp.Equal(got, []string{"b.two", "a.one"}) {
		t.Errorf("nearest with b.two boosted = %v", got)
	}
	got := s.Search("rain", search.Options{Limit: 2, Boost: boost})
	if len(got) != 2 || got[0].ID != "b.two" {
		t.Errorf("Search with boost = %v, want b.two first", got)
	}
}
