package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// FormatVersion is the frozen format this build reads and writes. Bump it
// with any change to the layout or to what a stored weight means.
const FormatVersion = 7

// The frozen form: magic, format version, CRC-32C of the payload, payload.
// The payload holds the configuration, the corpus statistics, the base
// segment with its postings, precomputed BM25 weights, expansion postings,
// word associations and ranked try-also terms, and the synonym table as it
// was stemmed, so Load only decodes;
// nothing is tokenized or scored again.
const (
	magic     = "KILNSRCH"
	headerLen = len(magic) + 8
)

// Sentinels returned (wrapped) by Load.
var (
	ErrFormat  = errors.New("not a kiln search index")
	ErrVersion = errors.New("unsupported search index version")
	ErrCorrupt = errors.New("corrupt search index")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// MarshalBinary returns the frozen form of the base index. Run-time
// additions (With) are not frozen: they are registered again at start-up.
func (ix *Index) MarshalBinary() ([]byte, error) {
	w := &writer{buf: make([]byte, headerLen, 1<<16)}
	w.config(&ix.cfg)
	w.f64(ix.st.avgLen)
	for _, a := range ix.st.fieldAvg {
		w.f64(a)
	}
	w.f64(ix.st.backendAvg)
	w.segment(ix.base)
	w.synonyms(ix.syn)
	copy(w.buf, magic)
	binary.LittleEndian.PutUint32(w.buf[len(magic):], FormatVersion)
	binary.LittleEndian.PutUint32(w.buf[len(magic)+4:], crcOf(w.buf[headerLen:]))
	return w.buf, nil
}

// Load decodes a frozen index. It checks the magic and the version, then
// every offset and count while it verifies a checksum, so a stale or
// damaged file fails with ErrFormat, ErrVersion or ErrCorrupt instead of
// misbehaving.
// data is copied once; every string of the index shares that copy.
func Load(data []byte) (*Index, error) { return LoadString(string(data)) }

// LoadString is Load without the copy: the index keeps substrings of data.
// Generated code embeds the frozen index as a string (//go:embed), so the
// bytes stay in the binary's read-only data and start-up allocates only the
// decoded arrays; the weights are read in place.
func LoadString(data string) (*Index, error) {
	if len(data) < headerLen || data[:len(magic)] != magic {
		return nil, fmt.Errorf("%w: bad magic; rebuild it with kiln-gen emit", ErrFormat)
	}
	if v := le32(data[len(magic):]); v != FormatVersion {
		return nil, fmt.Errorf("%w: got %d, this build reads %d; regenerate with kiln-gen emit", ErrVersion, v, FormatVersion)
	}
	// The decoder checks every offset and count, so it can run while
	// another core checksums the same bytes.
	sum := make(chan uint32, 1)
	go func() { sum <- crcOfString(data[headerLen:]) }()
	ix, err := decodePayload(data[headerLen:])
	if <-sum != le32(data[len(magic)+4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return ix, err
}

func le32(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// crcOfString checksums s in place: crc32 takes only []byte, and copying
// the index to check it would double start-up work. The view is read-only.
func crcOfString(s string) uint32 {
	if s == "" {
		return crcOf(nil)
	}
	return crcOf(unsafe.Slice(unsafe.StringData(s), len(s)))
}

func decodePayload(p string) (*Index, error) {
	r := &reader{s: p}
	var cfg Config
	r.config(&cfg)
	var st stats
	st.avgLen = r.f64()
	for f := range st.fieldAvg {
		st.fieldAvg[f] = r.f64()
	}
	st.backendAvg = r.f64()
	seg := r.segment()
	syn := r.synonyms()
	if r.err == nil && (syn == nil) != (cfg.Synonyms == 0) {
		r.fail("synonym table does not match the synonym weight")
	}
	if r.err == nil && r.off != len(r.s) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, r.err)
	}
	ix := newIndex(cfg, st, seg, nil, nil)
	ix.syn = syn
	return ix, nil
}

type writer struct{ buf []byte }

func (w *writer) uv(x uint64)   { w.buf = binary.AppendUvarint(w.buf, x) }
func (w *writer) u8(x uint8)    { w.buf = append(w.buf, x) }
func (w *writer) f64(x float64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(x)) }
func (w *writer) str(s string)  { w.uv(uint64(len(s))); w.buf = append(w.buf, s...) }

// align4 pads with zeros to a multiple of 4 bytes from the frozen form's
// start.
func (w *writer) align4() {
	for len(w.buf)%4 != 0 {
		w.buf = append(w.buf, 0)
	}
}

func (w *writer) bool(b bool) {
	if b {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *writer) config(c *Config) {
	w.f64(c.K1)
	w.f64(c.B)
	for f := range numFields {
		w.f64(c.Weights[f])
		w.f64(c.FieldB[f])
	}
	w.bool(c.FieldNorm)
	w.u8(uint8(c.Stem))
	w.u8(uint8(c.CJK))
	w.bool(c.AcronymPlural)
	w.bool(c.SplitDigitUpper)
	w.f64(c.BackendWeight)
	w.f64(c.Bigram)
	w.f64(c.NameCover)
	w.bool(c.QueryStop)
	w.uv(uint64(c.Feedback.Docs))
	w.uv(uint64(c.Feedback.Terms))
	w.f64(c.Feedback.Weight)
	w.f64(c.Synonyms)
	w.uv(uint64(c.Assoc.Terms))
	w.uv(uint64(c.Assoc.MinTools))
	w.uv(uint64(c.Assoc.PerTool))
	w.uv(uint64(c.Assoc.MaxWords))
	w.f64(c.Assoc.Weight)
	w.uv(uint64(c.Implied))
	w.f64(c.FileWords)
}

func (w *writer) segment(s *segment) {
	w.uv(uint64(len(s.docs)))
	nparams := 0
	for i := range s.docs {
		nparams += len(s.docs[i].Params)
	}
	w.uv(uint64(nparams))
	for i := range s.docs {
		d := &s.docs[i]
		// Most IDs are backend+"."+name; then only the ID is stored and
		// Backend and Name are substrings of it after Load.
		derived := d.ID == d.Backend+"."+d.Name && !strings.Contains(d.Backend, ".")
		w.bool(derived)
		w.str(d.ID)
		if !derived {
			w.str(d.Backend)
			w.str(d.Name)
		}
		w.str(d.Title)
		w.str(d.Description)
		w.uv(uint64(len(d.Params)))
		for _, p := range d.Params {
			w.str(p.Name)
			w.str(p.Description)
		}
		w.uv(uint64(s.docBackend[i]))
		w.u8(s.nameWords[i])
		w.u8(uint8(d.Takes))
	}
	w.uv(uint64(len(s.backendNames)))
	for _, b := range s.backendNames {
		w.str(b)
	}
	w.table(&s.tools)
	w.table(&s.exp)
	w.associates(&s.assoc, s.tools.numTerms())
	w.table(&s.backends)
	w.trigrams(&s.tri)
	w.suggestions(s)
}

// table layout: term count, term blob, each term's length and posting
// count, then all doc deltas, then all weights as little-endian float32, so
// Load fills each array in one tight loop with its exact size known. The
// weights start 4-aligned in the frozen form, so Load can use them in place.
func (w *writer) table(t *table) {
	n := t.numTerms()
	w.uv(uint64(n))
	w.str(t.terms)
	for i := range n {
		w.uv(uint64(t.termOff[i+1] - t.termOff[i]))
		w.uv(uint64(t.postOff[i+1] - t.postOff[i]))
	}
	w.uv(uint64(len(t.postDoc)))
	for i := range n {
		prev := uint32(0)
		for _, d := range t.postDoc[t.postOff[i]:t.postOff[i+1]] {
			w.uv(uint64(d - prev))
			prev = d
		}
	}
	w.align4()
	for _, x := range t.postW {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, math.Float32bits(x))
	}
}

func (w *writer) trigrams(t *trigrams) {
	w.uv(uint64(len(t.count)))
	for _, c := range t.count {
		w.uv(uint64(c))
	}
	w.uv(uint64(len(t.keys)))
	w.uv(uint64(len(t.docs)))
	prevKey := uint64(0)
	for i, k := range t.keys {
		w.uv(k - prevKey)
		prevKey = k
		lo, hi := t.off[i], t.off[i+1]
		w.uv(uint64(hi - lo))
		prev := uint32(0)
		for _, d := range t.docs[lo:hi] {
			w.uv(uint64(d - prev))
			prev = d
		}
	}
}

// suggestions layout: the total count, then per backend its count and
// per term its index in the tool table shifted left once, the low bit set
// when the shown word differs from the term and follows as a string. Most
// words are their own stem, and a shared term costs no string at Load.
func (w *writer) suggestions(s *segment) {
	w.uv(uint64(len(s.suggest)))
	for b := range s.backendNames {
		list := s.suggestionsOf(b)
		w.uv(uint64(len(list)))
		for _, sg := range list {
			if sg.word == "" {
				w.uv(uint64(sg.term) << 1)
			} else {
				w.uv(uint64(sg.term)<<1 | 1)
				w.str(sg.word)
			}
		}
	}
}

// reader decodes the payload. The first error sticks and every later read
// returns zero values, so decoding code checks r.err once per structure.
type reader struct {
	s   string
	off int
	err error
}

// fail records the first error and moves to the end of the data, so that
// every later read finds nothing without checking r.err.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.off, fmt.Sprintf(format, args...))
	}
	r.off = len(r.s)
}

// uv reads a uvarint. The one-byte case comes first and without a loop:
// most lengths and deltas are under 128, and Load is mostly varints.
func (r *reader) uv() uint64 {
	if s := r.s[r.off:]; s != "" && s[0] < 0x80 {
		r.off++
		return uint64(s[0])
	}
	return r.uvSlow()
}

func (r *reader) uvSlow() uint64 {
	var x uint64
	for shift := uint(0); ; shift += 7 {
		if r.off >= len(r.s) || shift > 63 {
			r.fail("truncated varint")
			return 0
		}
		c := r.s[r.off]
		r.off++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

// count reads a length and rejects one that could not fit in what is left,
// given each element takes at least minSize bytes, so a corrupt length
// never causes a huge allocation.
func (r *reader) count(minSize int) int {
	n := r.uv()
	if n > uint64(len(r.s)-r.off)/uint64(minSize) {
		r.fail("count %d exceeds the data", n)
		return 0
	}
	return int(n)
}

func (r *reader) fixed(n int) string {
	if n > len(r.s)-r.off {
		r.fail("truncated")
		return ""
	}
	s := r.s[r.off : r.off+n]
	r.off += n
	return s
}

// str reads a length-prefixed string, a substring of the data.
func (r *reader) str() string {
	n := r.uv()
	if n > uint64(len(r.s)-r.off) {
		r.fail("truncated string")
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) u8() uint8 {
	if s := r.s[r.off:]; s != "" {
		r.off++
		return s[0]
	}
	r.fail("truncated")
	return 0
}

// small reads a count that configures ranking, such as Feedback.Docs.
func (r *reader) small() int {
	x := r.uv()
	if x > maxSmall {
		r.fail("setting %d exceeds %d", x, maxSmall)
		return 0
	}
	return int(x)
}

// maxSmall bounds the counts in a Config: a few tools or words, never
// thousands.
const maxSmall = 1000

func (r *reader) bool() bool { return r.u8() == 1 }

func (r *reader) f64() float64 {
	s := r.fixed(8)
	if s == "" {
		return 0
	}
	x := math.Float64frombits(uint64(le32(s)) | uint64(le32(s[4:]))<<32)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		r.fail("non-finite number")
	}
	return x
}

func (r *reader) config(c *Config) {
	c.K1, c.B = r.f64(), r.f64()
	for f := range numFields {
		c.Weights[f], c.FieldB[f] = r.f64(), r.f64()
	}
	c.FieldNorm = r.bool()
	c.Stem, c.CJK = Stemmer(r.u8()), CJKMode(r.u8())
	c.AcronymPlural, c.SplitDigitUpper = r.bool(), r.bool()
	c.BackendWeight = r.f64()
	c.Bigram = r.f64()
	c.NameCover = r.f64()
	c.QueryStop = r.bool()
	c.Feedback.Docs, c.Feedback.Terms = r.small(), r.small()
	c.Feedback.Weight = r.f64()
	c.Synonyms = r.f64()
	c.Assoc.Terms, c.Assoc.MinTools, c.Assoc.PerTool = r.small(), r.small(), r.small()
	c.Assoc.MaxWords = r.small()
	c.Assoc.Weight = r.f64()
	c.Implied = r.small()
	c.FileWords = r.f64()
	if c.Stem > StemLight || c.CJK > CJKBoth {
		r.fail("unknown stemmer or CJK mode")
	}
}

func (r *reader) segment() *segment {
	s := &segment{}
	n := r.count(6)
	s.docs = make([]Doc, n)
	s.docBackend = make([]uint32, n)
	s.nameWords = make([]uint8, n)
	s.takes = make([]Kinds, n)
	params := make([]Param, 0, r.count(2))
	for i := range s.docs {
		d := &s.docs[i]
		derived := r.bool()
		d.ID = r.str()
		if derived {
			// Backend names never contain ".", tool names may.
			b, name, ok := strings.Cut(d.ID, ".")
			if !ok {
				r.fail("doc %d: ID %q has no backend", i, d.ID)
			}
			d.Backend, d.Name = b, name
		} else {
			d.Backend, d.Name = r.str(), r.str()
		}
		d.Title, d.Description = r.str(), r.str()
		np := r.count(2)
		start := len(params)
		if np > cap(params)-start {
			r.fail("doc %d: more parameters than counted", i)
			return nil
		}
		for range np {
			params = append(params, Param{Name: r.str(), Description: r.str()})
		}
		if np > 0 {
			d.Params = params[start:len(params):len(params)]
		}
		s.docBackend[i] = uint32(r.uv())
		s.nameWords[i] = r.u8()
		if d.Takes = Kinds(r.u8()); d.Takes >= 1<<numKinds {
			r.fail("doc %d: unknown value kinds %#x", i, d.Takes)
		}
		s.takes[i] = d.Takes
		if r.err != nil {
			return nil
		}
		if i > 0 && s.docs[i-1].ID >= d.ID {
			r.fail("doc IDs out of order at %d", i)
			return nil
		}
	}
	if len(params) != cap(params) {
		r.fail("parameter count does not add up")
		return nil
	}
	nb := r.count(1)
	s.backendNames = make([]string, nb)
	for i := range s.backendNames {
		s.backendNames[i] = r.str()
		if i > 0 && s.backendNames[i-1] >= s.backendNames[i] {
			r.fail("backends out of order")
		}
	}
	for i, b := range s.docBackend {
		if int(b) >= nb || s.backendNames[b] != s.docs[i].Backend {
			r.fail("doc %d: bad backend", i)
			return nil
		}
	}
	s.tools = r.table(n)
	s.exp = r.table(n)
	s.assoc = r.associates(s.tools.numTerms())
	s.backends = r.table(nb)
	s.tri = r.trigrams(n)
	r.suggestions(s)
	return s
}

func (r *reader) table(ndocs int) table {
	var t table
	n := r.count(2)
	t.terms = r.str()
	t.termOff = make([]uint32, n+1)
	t.postOff = make([]uint32, n+1)
	for i := range n {
		end := uint64(t.termOff[i]) + r.uv()
		if r.err != nil || end > uint64(len(t.terms)) {
			r.fail("term %d out of range", i)
			return table{}
		}
		t.termOff[i+1] = uint32(end)
		if i > 0 && t.term(i-1) >= t.term(i) {
			r.fail("terms out of order at %d", i)
			return table{}
		}
		t.postOff[i+1] = t.postOff[i] + uint32(min(r.uv(), math.MaxUint32/2))
	}
	np := r.count(5)
	if r.err != nil || int(t.termOff[n]) != len(t.terms) || int(t.postOff[n]) != np {
		r.fail("table lengths do not add up")
		return table{}
	}
	t.postDoc = make([]uint32, np)
	// The hot loop of Load: decode with locals instead of reader calls.
	s, off := r.s, r.off
	for i := range n {
		doc, lo, hi := uint64(0), t.postOff[i], t.postOff[i+1]
		for p := lo; p < hi; p++ {
			var d uint64
			if off < len(s) && s[off] < 0x80 {
				d = uint64(s[off])
				off++
			} else {
				r.off = off
				d = r.uvSlow()
				off = r.off
			}
			if p > lo && d == 0 || doc+d >= uint64(ndocs) {
				r.fail("posting %d of term %d out of order or range", p-lo, i)
				return table{}
			}
			doc += d
			t.postDoc[p] = uint32(doc)
		}
	}
	r.off = off
	r.align4()
	if t.postW = r.float32s(np); r.err != nil {
		return table{}
	}
	return t
}

// align4 skips the zero padding writer.align4 wrote.
func (r *reader) align4() {
	// The header is a multiple of 4 long, so payload offsets align alike.
	if pad := r.fixed(-r.off & 3); strings.Trim(pad, "\x00") != "" {
		r.fail("nonzero padding")
	}
}

// float32s reads n little-endian float32s. Where the bytes are aligned and
// the machine is little-endian they are used in place: a read-only view of
// the data Load keeps anyway, with nothing to allocate or copy.
func (r *reader) float32s(n int) []float32 {
	raw := r.fixed(4 * n)
	if r.err != nil || n == 0 {
		return nil
	}
	var out []float32
	if p := unsafe.StringData(raw); littleEndian && uintptr(unsafe.Pointer(p))%4 == 0 {
		out = unsafe.Slice((*float32)(unsafe.Pointer(p)), n)
	} else {
		out = make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le32(raw[4*i:]))
		}
	}
	for _, x := range out {
		if math.Float32bits(x)&0x7f800000 == 0x7f800000 {
			r.fail("non-finite weight")
			return nil
		}
	}
	return out
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func (r *reader) trigrams(ndocs int) trigrams {
	var t trigrams
	if nc := r.count(1); nc != ndocs {
		r.fail("trigram counts for %d docs, want %d", nc, ndocs)
		return t
	}
	t.count = make([]uint16, ndocs)
	for i := range t.count {
		c := r.uv()
		if c > math.MaxUint16 {
			r.fail("trigram count overflow")
		}
		t.count[i] = uint16(c)
	}
	nk := r.count(2)
	t.keys = make([]uint64, 0, nk)
	t.off = make([]uint32, 1, nk+1)
	t.docs = make([]uint32, 0, r.count(1))
	key := uint64(0)
	for i := range nk {
		d := r.uv()
		if i > 0 && d == 0 || key+d < key {
			r.fail("trigram keys out of order")
		}
		key += d
		t.keys = append(t.keys, key)
		np := r.count(1)
		if np > cap(t.docs)-len(t.docs) {
			r.fail("more trigram postings than counted")
			return trigrams{}
		}
		doc := uint64(0)
		for j := range np {
			d := r.uv()
			if j > 0 && d == 0 {
				r.fail("duplicate trigram posting")
			}
			doc += d
			if doc >= uint64(ndocs) {
				r.fail("trigram doc out of range")
			}
			t.docs = append(t.docs, uint32(doc))
		}
		if r.err != nil {
			return trigrams{}
		}
		t.off = append(t.off, uint32(len(t.docs)))
	}
	if len(t.docs) != cap(t.docs) {
		r.fail("trigram posting count does not add up")
		return trigrams{}
	}
	return t
}

func (r *reader) suggestions(s *segment) {
	total := r.count(1)
	if r.err != nil {
		return
	}
	s.suggest = make([]suggestion, 0, total)
	s.suggestOff = make([]uint32, 1, len(s.backendNames)+1)
	nt := uint64(s.tools.numTerms())
	for range s.backendNames {
		n := r.uv()
		if n > maxSuggest || uint64(len(s.suggest))+n > uint64(total) {
			r.fail("%d try-also terms", n)
			return
		}
		for range n {
			x := r.uv()
			if r.err != nil || x>>1 >= nt {
				r.fail("try-also term out of range")
				return
			}
			sg := suggestion{term: uint32(x >> 1)}
			if x&1 == 1 {
				if sg.word = r.str(); sg.word == "" {
					r.fail("empty try-also word")
					return
				}
			}
			s.suggest = append(s.suggest, sg)
		}
		s.suggestOff = append(s.suggestOff, uint32(len(s.suggest)))
	}
	if len(s.suggest) != total {
		r.fail("try-also counts do not add up")
	}
}

// synonyms writes the synonym table: its terms in byte order, each with
// its synonyms in table order.
func (w *writer) synonyms(syn map[string][]string) {
	w.uv(uint64(len(syn)))
	for _, t := range slices.Sorted(maps.Keys(syn)) {
		w.str(t)
		w.uv(uint64(len(syn[t])))
		for _, s := range syn[t] {
			w.str(s)
		}
	}
}

func (r *reader) synonyms() map[string][]string {
	n := r.count(2)
	if n == 0 || r.err != nil {
		return nil
	}
	syn := make(map[string][]string, n)
	for range n {
		t := r.str()
		ss := make([]string, r.count(1))
		for i := range ss {
			ss[i] = r.str()
		}
		if r.err != nil {
			return nil
		}
		syn[t] = ss
	}
	return syn
}

// associates layout: a flag, the total count, then per tool term its
// count of associates and their term indexes, so Load fills both arrays
// at their final size, without a map.
func (w *writer) associates(a *associates, nterms int) {
	w.bool(a.off != nil)
	if a.off == nil {
		return
	}
	w.uv(uint64(len(a.to)))
	for i := range nterms {
		w.uv(uint64(a.off[i+1] - a.off[i]))
		for _, j := range a.to[a.off[i]:a.off[i+1]] {
			w.uv(uint64(j))
		}
	}
}

func (r *reader) associates(nterms int) associates {
	if !r.bool() || r.err != nil {
		return associates{}
	}
	total := r.count(1)
	a := associates{off: make([]uint32, nterms+1), to: make([]uint32, 0, total)}
	for i := range nterms {
		n := r.uv()
		if n > maxSmall {
			r.fail("term %d: %d associates", i, n)
			return associates{}
		}
		for range n {
			j := r.uv()
			if j >= uint64(nterms) {
				r.fail("associate of term %d out of range", i)
				return associates{}
			}
			a.to = append(a.to, uint32(j))
		}
		if r.err != nil {
			return associates{}
		}
		a.off[i+1] = uint32(len(a.to))
	}
	if len(a.to) != total {
		r.fail("associate counts do not add up")
		return associates{}
	}
	return a
}
