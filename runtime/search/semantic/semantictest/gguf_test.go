package semantictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// parsed is a GGUF file read back independently of the writer, following
// gguf.h's layout description.
type parsed struct {
	version  uint32
	kv       []KV
	infos    []tensorInfo
	dataAt   int64 // offset of the data section
	tensors  []Tensor
	fileSize int
}

type tensorInfo struct {
	name   string
	shape  []int64
	typ    uint32
	offset uint64
}

type reader struct {
	r   *bytes.Reader
	err error
}

func (r *reader) read(v any) {
	if r.err == nil {
		r.err = binary.Read(r.r, binary.LittleEndian, v)
	}
}

func (r *reader) u32() (v uint32) { r.read(&v); return v }
func (r *reader) u64() (v uint64) { r.read(&v); return v }

func (r *reader) str() string {
	n := r.u64()
	if r.err != nil || n > uint64(r.r.Len()) {
		r.err = fmt.Errorf("bad string length %d", n)
		return ""
	}
	b := make([]byte, n)
	_, r.err = io.ReadFull(r.r, b)
	return string(b)
}

func (r *reader) scalar(typ uint32) any {
	switch typ {
	case typeUint8:
		var v uint8
		r.read(&v)
		return v
	case typeInt8:
		var v int8
		r.read(&v)
		return v
	case typeUint16:
		var v uint16
		r.read(&v)
		return v
	case typeInt16:
		var v int16
		r.read(&v)
		return v
	case typeUint32:
		return r.u32()
	case typeInt32:
		var v int32
		r.read(&v)
		return v
	case typeFloat32:
		var v float32
		r.read(&v)
		return v
	case typeBool:
		var v uint8
		r.read(&v)
		if v > 1 {
			r.err = fmt.Errorf("bool byte %d", v)
		}
		return v == 1
	case typeString:
		return r.str()
	case typeUint64:
		return r.u64()
	case typeInt64:
		var v int64
		r.read(&v)
		return v
	case typeFloat64:
		var v float64
		r.read(&v)
		return v
	}
	r.err = fmt.Errorf("unknown type %d", typ)
	return nil
}

func collect[T any](r *reader, n uint64, typ uint32) []T {
	out := make([]T, 0, min(n, 1<<20))
	for i := uint64(0); i < n && r.err == nil; i++ {
		v, _ := r.scalar(typ).(T)
		out = append(out, v)
	}
	return out
}

func parse(b []byte) (*parsed, error) {
	r := &reader{r: bytes.NewReader(b)}
	magic := make([]byte, 4)
	r.read(magic)
	if string(magic) != ggufMagic {
		return nil, fmt.Errorf("magic %q", magic)
	}
	p := &parsed{version: r.u32(), fileSize: len(b)}
	nTensors, nKV := r.u64(), r.u64()
	for i := uint64(0); i < nKV && r.err == nil; i++ {
		key := r.str()
		typ := r.u32()
		var val any
		if typ == typeArray {
			elem, n := r.u32(), r.u64()
			switch elem {
			case typeString:
				val = collect[string](r, n, elem)
			case typeInt32:
				val = collect[int32](r, n, elem)
			case typeUint32:
				val = collect[uint32](r, n, elem)
			case typeFloat32:
				val = collect[float32](r, n, elem)
			default:
				return nil, fmt.Errorf("key %s: array of type %d", key, elem)
			}
		} else {
			val = r.scalar(typ)
		}
		p.kv = append(p.kv, KV{key, val})
	}
	for i := uint64(0); i < nTensors && r.err == nil; i++ {
		ti := tensorInfo{name: r.str()}
		nd := r.u32()
		for j := uint32(0); j < nd && r.err == nil; j++ {
			ti.shape = append(ti.shape, int64(r.u64()))
		}
		ti.typ = r.u32()
		ti.offset = r.u64()
		p.infos = append(p.infos, ti)
	}
	if r.err != nil {
		return nil, r.err
	}
	align := (&File{KV: p.kv}).Alignment()
	headerEnd := int64(len(b) - r.r.Len())
	p.dataAt = int64(pad(uint64(headerEnd), align))
	for _, ti := range p.infos {
		if ti.offset%uint64(align) != 0 {
			return nil, fmt.Errorf("tensor %s: offset %d not aligned to %d", ti.name, ti.offset, align)
		}
		n := count(ti.shape)
		typ := TensorType(ti.typ)
		start := p.dataAt + int64(ti.offset)
		if typ != F32 && typ != Q8_0 {
			return nil, fmt.Errorf("tensor %s: type %d", ti.name, ti.typ)
		}
		if start+int64(typ.size(n)) > int64(len(b)) {
			return nil, fmt.Errorf("tensor %s: data past end of file", ti.name)
		}
		data := make([]float32, n)
		raw := b[start:]
		for k := range data {
			if typ == Q8_0 {
				blk := raw[k/q8Block*(2+q8Block):]
				data[k] = halfToFloat(binary.LittleEndian.Uint16(blk)) * float32(int8(blk[2+k%q8Block]))
			} else {
				data[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
			}
		}
		p.tensors = append(p.tensors, Tensor{Name: ti.name, Shape: ti.shape, Type: typ, Data: data})
	}
	return p, nil
}

// halfToFloat decodes IEEE half precision, independently of f16.
func halfToFloat(h uint16) float32 {
	exp := int(h >> 10 & 0x1f)
	mant := float64(h & 0x3ff)
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	switch exp {
	case 0:
		return float32(sign * mant / 1024 * math.Pow(2, -14))
	case 0x1f:
		return float32(math.Inf(int(sign)))
	}
	return float32(sign * (1 + mant/1024) * math.Pow(2, float64(exp-15)))
}

func TestF16(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{1, 0x3c00},
		{0.5, 0x3800},
		{65504, 0x7bff},         // largest half
		{70000, 0x7c00},         // overflows to infinity
		{6.1035156e-05, 0x0400}, // smallest normal
		{5.9604645e-08, 0x0001}, // smallest subnormal
		{1e-9, 0x0000},          // underflows
		{1.0009766, 0x3c01},     // 1 + 2^-10, exact
		{1.00048828125, 0x3c00}, // halfway, ties to even
		{1.00146484375, 0x3c02}, // halfway, ties to even (up)
	}
	for _, tc := range tests {
		if got := f16(tc.in); got != tc.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	for h := uint16(0); h < 0x7c00; h++ {
		if got := f16(halfToFloat(h)); got != h {
			t.Fatalf("f16(halfToFloat(%#04x)) = %#04x", h, got)
		}
	}
}

func encode(t *testing.T, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	return buf.Bytes()
}

func TestWriteToRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		file *File
	}{
		{"empty", &File{}},
		{"every scalar type", &File{KV: []KV{
			{"u8", uint8(200)}, {"i8", int8(-3)}, {"u16", uint16(65000)}, {"i16", int16(-30000)},
			{"u32", uint32(1 << 31)}, {"i32", int32(-7)}, {"f32", float32(1.5)}, {"t", true}, {"f", false},
			{"s", "héllo ▁world"}, {"u64", uint64(1 << 40)}, {"i64", int64(-1 << 40)}, {"f64", 2.25},
		}}},
		{"arrays", &File{KV: []KV{
			{"strs", []string{"a", "", "▁b"}}, {"i32s", []int32{1, -2}}, {"u32s", []uint32{3}}, {"f32s", []float32{0.5, -0.25}},
		}}},
		{"tensors with padding", &File{
			KV: []KV{{"general.architecture", "test"}},
			Tensors: []Tensor{
				{Name: "a", Shape: []int64{3}, Data: []float32{1, 2, 3}},
				{Name: "b", Shape: []int64{2, 2}, Data: []float32{-1, 0, 1, 2}},
				{Name: "c", Shape: []int64{1, 1, 1, 9}, Data: make([]float32, 9)},
			},
		}},
		{"q8_0", &File{Tensors: []Tensor{
			// Multiples of the block scale (max/127) survive exactly.
			{Name: "q", Shape: []int64{32, 2}, Type: Q8_0, Data: q8Exact()},
			{Name: "f", Shape: []int64{1}, Data: []float32{3}},
		}}},
		{"custom alignment", &File{
			KV:      []KV{{"general.alignment", uint32(64)}},
			Tensors: []Tensor{{Name: "x", Shape: []int64{5}, Data: []float32{1, 2, 3, 4, 5}}, {Name: "y", Shape: []int64{1}, Data: []float32{7}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(t, tc.file)
			p, err := parse(b)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if p.version != 3 {
				t.Errorf("version = %d, want 3", p.version)
			}
			if diff := cmp.Diff(tc.file.KV, p.kv); diff != "" {
				t.Errorf("kv (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.file.Tensors, p.tensors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tensors (-want +got):\n%s", diff)
			}
			// gguf.cpp requires each offset to be the padded sum of the
			// tensors before it, and the file to hold the last one padded.
			align := tc.file.Alignment()
			var want uint64
			for _, ti := range p.infos {
				if ti.offset != want {
					t.Errorf("tensor %s: offset %d, want %d", ti.name, ti.offset, want)
				}
				want += pad(uint64(TensorType(ti.typ).size(count(ti.shape))), align)
			}
			if len(p.infos) > 0 && int64(len(b)) != p.dataAt+int64(want) {
				t.Errorf("file is %d bytes, want data start %d + %d", len(b), p.dataAt, want)
			}
		})
	}
}

func TestWriteToErrors(t *testing.T) {
	tests := []struct {
		name string
		file *File
		want string
	}{
		{"unsupported value", &File{KV: []KV{{"m", map[string]int{}}}}, "unsupported value type"},
		{"shape mismatch", &File{Tensors: []Tensor{{Name: "t", Shape: []int64{2, 2}, Data: []float32{1}}}}, "does not hold"},
		{"no shape", &File{Tensors: []Tensor{{Name: "t", Data: []float32{1}}}}, "does not hold"},
		{"bad alignment", &File{KV: []KV{{"general.alignment", uint32(24)}}}, "power of two"},
		{"q8 partial block", &File{Tensors: []Tensor{{Name: "t", Shape: []int64{16}, Type: Q8_0, Data: make([]float32, 16)}}}, "whole blocks"},
		{"unknown type", &File{Tensors: []Tensor{{Name: "t", Shape: []int64{1}, Type: 2, Data: []float32{1}}}}, "unsupported type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.file.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteTo error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

var corpus = []string{
	"read_file Read the complete contents of a file from disk.",
	"get_weather Get the weather forecast for a city",
	"Crème brûlée: 2 eggs, sugar & cream!",
}

// bertTensors lists what llama.cpp's BERT loader creates
// (llama_model_bert::load_arch_tensors, src/models/bert.cpp) with separate
// Q/K/V and every optional bias present.
func bertTensors(layers int) []string {
	names := []string{"token_embd.weight", "token_types.weight", "position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"}
	for i := range layers {
		for _, s := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up", "ffn_down", "layer_output_norm"} {
			names = append(names, fmt.Sprintf("blk.%d.%s.weight", i, s), fmt.Sprintf("blk.%d.%s.bias", i, s))
		}
	}
	slices.Sort(names)
	return names
}

func TestModelMatchesLlamaBERT(t *testing.T) {
	b := BERT{Embd: 16, Layers: 3, Heads: 4, FF: 24, Context: 256, Seed: 9}
	f, err := b.Model(corpus)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse(encode(t, f))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	kv := map[string]any{}
	for _, e := range p.kv {
		kv[e.Key] = e.Value
	}
	vocab, _ := kv["tokenizer.ggml.tokens"].([]string)
	nv := int64(len(vocab))

	// Keys the loader reads without a default, with the types it demands.
	wantKV := map[string]any{
		"general.architecture":              "bert",
		"bert.context_length":               uint32(256),
		"bert.embedding_length":             uint32(16),
		"bert.feed_forward_length":          uint32(24),
		"bert.block_count":                  uint32(3),
		"bert.attention.head_count":         uint32(4),
		"bert.attention.layer_norm_epsilon": float32(1e-12),
		"bert.attention.causal":             false,
		"bert.pooling_type":                 uint32(1),
		"tokenizer.ggml.model":              "bert",
		"tokenizer.ggml.token_type_count":   uint32(2),
		"tokenizer.ggml.seperator_token_id": uint32(3),
		"tokenizer.ggml.bos_token_id":       uint32(2),
	}
	for k, want := range wantKV {
		if diff := cmp.Diff(want, kv[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	for id, name := range map[string]string{"bos": "[CLS]", "seperator": "[SEP]", "unknown": "[UNK]", "padding": "[PAD]", "mask": "[MASK]"} {
		i, _ := kv["tokenizer.ggml."+id+"_token_id"].(uint32)
		if int(i) >= len(vocab) || vocab[i] != name {
			t.Errorf("%s_token_id = %d, want the id of %s", id, i, name)
		}
	}
	if types, _ := kv["tokenizer.ggml.token_type"].([]int32); len(types) != len(vocab) {
		t.Errorf("%d token types for %d tokens", len(types), len(vocab))
	}

	var names []string
	shapes := map[string][]int64{}
	for _, ti := range p.infos {
		names = append(names, ti.name)
		shapes[ti.name] = ti.shape
	}
	slices.Sort(names)
	if diff := cmp.Diff(bertTensors(3), names); diff != "" {
		t.Errorf("tensor names (-want +got):\n%s", diff)
	}
	for name, want := range map[string][]int64{
		"token_embd.weight":     {16, nv},
		"token_types.weight":    {16, 2},
		"position_embd.weight":  {16, 256},
		"blk.2.attn_q.weight":   {16, 16},
		"blk.0.ffn_up.weight":   {16, 24},
		"blk.0.ffn_up.bias":     {24},
		"blk.1.ffn_down.weight": {24, 16},
	} {
		if diff := cmp.Diff(want, shapes[name]); diff != "" {
			t.Errorf("%s shape (-want +got):\n%s", name, diff)
		}
	}
}

func TestModelErrors(t *testing.T) {
	if _, err := (BERT{Embd: 30, Heads: 4}).Model(corpus); err == nil {
		t.Error("Model accepted 30 dimensions over 4 heads")
	}
}

func TestWriteModelDeterministic(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b BERT) (string, []byte) {
		t.Helper()
		path := filepath.Join(dir, name)
		sum, err := b.WriteModel(path, corpus)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != sum {
			t.Errorf("WriteModel returned sha256 %s, file has %s", sum, got)
		}
		return sum, data
	}
	a, da := write("a.gguf", Tiny)
	b, db := write("b.gguf", Tiny)
	if a != b || !bytes.Equal(da, db) {
		t.Errorf("two writes of the same model differ: %s vs %s", a, b)
	}
	other := Tiny
	other.Seed++
	if c, _ := write("c.gguf", other); c == a {
		t.Error("a different seed wrote the same file")
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  Hello\tWorld \n", []string{"hello", "world"}},
		{"read_file(path)", []string{"read", "_", "file", "(", "path", ")"}},
		{"a+b=c", []string{"a", "+", "b", "=", "c"}},
		{"Crème 2.5", []string{"crème", "2", ".", "5"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Words(tc.in)); diff != "" {
			t.Errorf("Words(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestVocab(t *testing.T) {
	v := Vocab(corpus)
	if diff := cmp.Diff(specials, v[:len(specials)]); diff != "" {
		t.Errorf("special tokens (-want +got):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, tok := range v {
		if seen[tok] {
			t.Errorf("duplicate token %q", tok)
		}
		seen[tok] = true
	}
	for _, text := range corpus {
		for _, w := range Words(text) {
			if !seen[phantom+w] {
				t.Errorf("corpus word %q missing as %q", w, phantom+w)
			}
		}
	}
	for _, tok := range []string{phantom + "q", "q", phantom + "7", "7", phantom + "~"} {
		if !seen[tok] {
			t.Errorf("character token %q missing", tok)
		}
	}
	if seen[phantom+"Q"] {
		t.Error("uppercase token present: the tokenizer lowercases first")
	}
}

// q8Exact returns two Q8_0 blocks whose values are integer multiples of a
// power-of-two scale (max 127*2^-6 and 127*2^-3), so quantization is exact.
func q8Exact() []float32 {
	var out []float32
	for _, scale := range []float32{1.0 / 64, 1.0 / 8} {
		for i := range q8Block {
			out = append(out, float32(127-8*i)*scale)
		}
	}
	return out
}

func TestQ8Model(t *testing.T) {
	b := BERT{Embd: 64, Layers: 1, Heads: 2, FF: 96, Context: 256, Seed: 3, Q8: true}
	f, err := b.Model(corpus)
	if err != nil {
		t.Fatal(err)
	}
	fp := b
	fp.Q8 = false
	ref, err := fp.Model(corpus)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse(encode(t, f))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for i, got := range p.tensors {
		want := ref.Tensors[i]
		wantType := F32
		if len(want.Shape) == 2 && want.Name != "position_embd.weight" && want.Name != "token_types.weight" {
			wantType = Q8_0
		}
		if got.Type != wantType {
			t.Errorf("%s stored as %d, want %d", got.Name, got.Type, wantType)
		}
		// Q8_0 error is at most half a step (max|x|/127/2 per block) plus
		// |q| times the f16 rounding of the scale (127 * 2^-11 steps).
		var amax float32
		for _, x := range want.Data {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		if diff := cmp.Diff(want.Data, got.Data, cmpopts.EquateApprox(0, float64(amax)/127*0.57)); diff != "" {
			t.Errorf("%s beyond Q8_0 error (-want +got):\n%s", got.Name, diff)
		}
	}
	if _, err := (BERT{Embd: 48, Heads: 2, FF: 64, Q8: true}).Model(corpus); err == nil {
		t.Error("Model accepted Q8_0 rows of 48")
	}
}
