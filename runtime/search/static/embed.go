package static

import (
	"math"
	"strings"
	"unicode"

	"github.com/kilnmcp/kiln/runtime/textcut"
)

// sifA is the smooth-inverse-frequency constant a of a/(a+p(w)): with
// Zipf's p, "the" weighs about 0.01, a word ranked 1,000th about 0.9.
// 1e-3 is the value Arora et al. found robust across tasks.
const sifA = 1e-3

// maxEmbedBytes bounds the part of a text that is embedded: past a few
// KiB a pasted document's mean vector no longer moves.
const maxEmbedBytes = 8 << 10

// Embedder embeds texts by looking their words up in a Table. It is
// immutable and safe for concurrent use; Close is a no-op, so it satisfies
// semantic.Embedder.
type Embedder struct {
	t      *Table
	weight []float32 // SIF weight of t.Words[i]
}

// NewEmbedder returns the embedder of t.
func NewEmbedder(t *Table) *Embedder {
	if t.index == nil {
		t.reindex()
	}
	e := &Embedder{t: t, weight: make([]float32, len(t.Words))}
	h := math.Log(float64(max(t.Total, 1))) + 0.5772
	for i, r := range t.Ranks {
		p := 1 / (float64(r+1) * h)
		e.weight[i] = float32(sifA / (sifA + p))
	}
	return e
}

// Embed returns text's vector: the weighted mean of its known words'
// vectors minus the table's common component. A text with no known word
// gets the zero vector, which matches nothing, so such a query ranks by
// words alone.
func (e *Embedder) Embed(text string) ([]float32, error) {
	v := e.raw(text)
	e.t.removeCommon(v)
	return v, nil
}

// Close does nothing: the embedder holds no resources.
func (e *Embedder) Close() error { return nil }

// Known reports how many of text's words the table has, and how many
// words it has in all.
func (e *Embedder) Known(text string) (known, words int) {
	for _, w := range Words(text) {
		words++
		if _, ok := e.t.index[w]; ok {
			known++
		}
	}
	return known, words
}

func (e *Embedder) raw(text string) []float32 {
	text = textcut.Prefix(text, maxEmbedBytes)
	d := e.t.Dim
	v := make([]float32, d)
	var sum float32
	for _, w := range Words(text) {
		i, ok := e.t.index[w]
		if !ok {
			continue
		}
		wt := e.weight[i]
		s := wt * e.t.Scales[i]
		for j, q := range e.t.Q[int(i)*d : int(i+1)*d] {
			v[j] += s * float32(q)
		}
		sum += wt
	}
	if sum > 0 {
		for j := range v {
			v[j] /= sum
		}
	}
	return v
}

func (t *Table) removeCommon(v []float32) {
	if len(t.Mean) != len(v) || len(t.PC) != len(v) || isZero(v) {
		return
	}
	var p float32
	for j := range v {
		v[j] -= t.Mean[j]
		p += v[j] * t.PC[j]
	}
	for j := range v {
		v[j] -= p * t.PC[j]
	}
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Fit sets t's common component from texts, the compiled tools' texts:
// the mean of their raw embeddings and the first principal component of
// the centred ones (power iteration from a fixed start, sign fixed, so
// two emits give the same bytes). Texts with no known word are ignored.
func (t *Table) Fit(texts []string) {
	e := NewEmbedder(t)
	d := t.Dim
	var rows [][]float32
	for _, s := range texts {
		if v := e.raw(s); !isZero(v) {
			rows = append(rows, v)
		}
	}
	t.Mean, t.PC = nil, nil
	if len(rows) < 2 {
		return
	}
	mean := make([]float64, d)
	for _, r := range rows {
		for j, x := range r {
			mean[j] += float64(x)
		}
	}
	for j := range mean {
		mean[j] /= float64(len(rows))
	}
	pc := make([]float64, d)
	for j := range pc {
		pc[j] = 1 / math.Sqrt(float64(d))
	}
	next := make([]float64, d)
	for range 50 {
		clear(next)
		for _, r := range rows {
			var p float64
			for j, x := range r {
				p += (float64(x) - mean[j]) * pc[j]
			}
			for j, x := range r {
				next[j] += p * (float64(x) - mean[j])
			}
		}
		var n float64
		for _, x := range next {
			n += x * x
		}
		if n == 0 {
			return
		}
		n = math.Sqrt(n)
		for j := range pc {
			pc[j] = next[j] / n
		}
	}
	// Fix the sign: the largest component positive.
	big := 0
	for j := range pc {
		if math.Abs(pc[j]) > math.Abs(pc[big]) {
			big = j
		}
	}
	sign := 1.0
	if pc[big] < 0 {
		sign = -1
	}
	t.Mean, t.PC = make([]float32, d), make([]float32, d)
	for j := range pc {
		t.Mean[j], t.PC[j] = float32(mean[j]), float32(sign*pc[j])
	}
}

// Words splits text into the lower-case words a word-vector file lists:
// runs of letters and digits, camelCase and letter–digit boundaries
// split (listFiles → list, files). No stemming: GloVe has every inflected
// form, and a stem is often no word of it.
func Words(text string) []string {
	var out []string
	var b strings.Builder
	var prev rune
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			prev = 0
			continue
		}
		if b.Len() > 0 {
			lowerToUpper := unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
			acronymEnd := unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			digitEdge := unicode.IsDigit(r) != unicode.IsDigit(prev)
			if lowerToUpper || acronymEnd || digitEdge {
				flush()
			}
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	flush()
	return out
}

// DefaultTop is how many of the most frequent words a cut keeps besides
// the tools' own, so a query word no tool uses still has a vector.
const DefaultTop = 30_000

// DefaultWeight is the cosine's weight against the normalised lexical
// score when this tier is fused (semantic.FuseRerank, FuseLinear). Every
// weight measured lowered nDCG@5 on kiln's lexical ranking; 0.1 cost the
// least on both shared benchmarks while still reordering near-ties
// (kiln-gen eval --vectors).
const DefaultWeight = 0.1
