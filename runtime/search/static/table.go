package static

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kilnmcp/kiln/runtime/binread"
)

// Table is a frozen cut of a word-vector set: each word's vector quantized
// to int8 with one scale per word (value ≈ Q·Scale), the word's frequency
// rank in the full set (for its weight), and the common component fitted
// on the compiled tools. Int8 keeps a 100-d word at 104 bytes; cosine
// rankings move by less than the noise of the vectors themselves
// (TestQuantizeRoundTrip bounds the error).
type Table struct {
	Source string // the word-vector file as configured
	SHA256 string // lowercase hex sha256 of that file
	Dim    int
	// Total is how many words the full set had: Zipf's law needs it to
	// turn a rank into a probability.
	Total  int
	Words  []string
	Ranks  []uint32 // 0-based frequency rank of Words[i] in the full set
	Scales []float32
	Q      []int8 // len(Words)*Dim
	// Mean and PC are the common component removed from every embedding:
	// the mean of the compiled tools' raw embeddings and the first
	// principal component of what is left. Nil before Fit.
	Mean, PC []float32

	index map[string]int32
}

// Cut keeps the words of raw for which keep returns true, plus the top
// most frequent ones, and quantizes their vectors.
func Cut(raw *Raw, source, sha string, keep func(string) bool, top int) *Table {
	t := &Table{Source: source, SHA256: sha, Dim: raw.Dim, Total: len(raw.Words)}
	for i, w := range raw.Words {
		if i >= top && (keep == nil || !keep(w)) {
			continue
		}
		t.Words = append(t.Words, w)
		t.Ranks = append(t.Ranks, uint32(i))
		scale, q := quantize(raw.Vecs[i*raw.Dim : (i+1)*raw.Dim])
		t.Scales = append(t.Scales, scale)
		t.Q = append(t.Q, q...)
	}
	t.reindex()
	return t
}

func quantize(v []float32) (float32, []int8) {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	q := make([]int8, len(v))
	if m == 0 {
		return 0, q
	}
	scale := m / 127
	for i, x := range v {
		q[i] = int8(math.Round(float64(x / scale)))
	}
	return scale, q
}

func (t *Table) reindex() {
	t.index = make(map[string]int32, len(t.Words))
	for i, w := range t.Words {
		if _, dup := t.index[w]; !dup {
			t.index[w] = int32(i)
		}
	}
}

// Len is the number of words in the cut.
func (t *Table) Len() int { return len(t.Words) }

// Bytes is the size of the frozen form.
func (t *Table) Bytes() int {
	b, _ := t.MarshalBinary()
	return len(b)
}

// The binary form, little-endian: magic; strings as a uint32 length and
// bytes: source, sha256; uint32 dim, total, count; count words; count
// uint32 ranks; count float32 scales; count*dim int8; then a uint32 flag
// and, when 1, dim float32 mean and dim float32 principal component.
const tableMagic = "KILNSWV1"

// MarshalBinary encodes t for generated/; Load decodes it.
func (t *Table) MarshalBinary() ([]byte, error) {
	n := len(t.Words)
	if len(t.Ranks) != n || len(t.Scales) != n || len(t.Q) != n*t.Dim {
		return nil, fmt.Errorf("%w: %d words with %d ranks, %d scales and %d values", ErrFormat, n, len(t.Ranks), len(t.Scales), len(t.Q))
	}
	b := []byte(tableMagic)
	str := func(s string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	str(t.Source)
	str(t.SHA256)
	for _, x := range []int{t.Dim, t.Total, n} {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	for _, w := range t.Words {
		str(w)
	}
	for _, r := range t.Ranks {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	for _, s := range t.Scales {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s))
	}
	for _, q := range t.Q {
		b = append(b, byte(q))
	}
	fitted := len(t.Mean) == t.Dim && len(t.PC) == t.Dim
	if !fitted {
		return binary.LittleEndian.AppendUint32(b, 0), nil
	}
	b = binary.LittleEndian.AppendUint32(b, 1)
	for _, x := range append(append([]float32(nil), t.Mean...), t.PC...) {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b, nil
}

// Load decodes a table MarshalBinary wrote, typically embedded in
// generated/searchindex.
func Load(b []byte) (*Table, error) {
	d := binread.New(b, ErrFormat)
	if string(d.Next(len(tableMagic))) != tableMagic {
		return nil, fmt.Errorf("%w: not a Kiln static vectors file", ErrFormat)
	}
	t := &Table{Source: d.Str(), SHA256: d.Str()}
	t.Dim, t.Total = int(d.U32()), int(d.U32())
	n := int(d.U32())
	// Every word costs at least 4+4+4+dim bytes: a larger count is corrupt,
	// and checking first keeps it from allocating gigabytes.
	if d.Err == nil && (t.Dim <= 0 || t.Dim > 1<<16 || n > len(d.B)/(12+t.Dim)) {
		return nil, fmt.Errorf("%w: %d words of %d dimensions in %d bytes", ErrFormat, n, t.Dim, len(d.B))
	}
	t.Words = make([]string, n)
	for i := range t.Words {
		t.Words[i] = d.Str()
	}
	t.Ranks = make([]uint32, n)
	for i := range t.Ranks {
		t.Ranks[i] = d.U32()
	}
	t.Scales = make([]float32, n)
	for i := range t.Scales {
		t.Scales[i] = math.Float32frombits(d.U32())
	}
	q := d.Next(n * t.Dim)
	t.Q = make([]int8, len(q))
	for i, x := range q {
		t.Q[i] = int8(x)
	}
	if d.U32() == 1 {
		t.Mean, t.PC = floats(d, t.Dim), floats(d, t.Dim)
	}
	if d.Err == nil && len(d.B) != 0 {
		d.Err = fmt.Errorf("%w: %d bytes after the table", ErrFormat, len(d.B))
	}
	if d.Err != nil {
		return nil, d.Err
	}
	t.reindex()
	return t, nil
}

// CutFor is what emit freezes for a tool set: raw cut to the words of
// texts plus the top most frequent words, its common component fitted on
// texts.
func CutFor(raw *Raw, source, sha string, texts []string, top int) *Table {
	keep := map[string]bool{}
	for _, s := range texts {
		for _, w := range Words(s) {
			keep[w] = true
		}
	}
	t := Cut(raw, source, sha, func(w string) bool { return keep[w] }, top)
	t.Fit(texts)
	return t
}

// floats reads n little-endian float32s.
func floats(d *binread.Reader, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(d.U32())
	}
	return out
}
