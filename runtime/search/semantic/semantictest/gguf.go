package semantictest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// GGUF value types, as numbered in ggml/include/gguf.h (enum gguf_type).
const (
	typeUint8   uint32 = 0
	typeInt8    uint32 = 1
	typeUint16  uint32 = 2
	typeInt16   uint32 = 3
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
	typeUint64  uint32 = 10
	typeInt64   uint32 = 11
	typeFloat64 uint32 = 12
)

// TensorType is the ggml type a tensor is stored as (enum ggml_type).
type TensorType uint32

// The tensor types the writer encodes: F32 for exact tests, Q8_0 for
// benchmarks that should cost what a real quantized model costs.
const (
	F32  TensorType = 0
	Q8_0 TensorType = 8
)

// q8Block is QK8_0 in ggml-common.h: 32 weights share one f16 scale.
const q8Block = 32

// size returns the bytes n values take as t.
func (t TensorType) size(n int) int {
	if t == Q8_0 {
		return n / q8Block * (2 + q8Block)
	}
	return 4 * n
}

// ggufVersion is GGUF_VERSION in gguf.h; defaultAlignment is
// GGUF_DEFAULT_ALIGNMENT, used when general.alignment is absent.
const (
	ggufMagic        = "GGUF"
	ggufVersion      = 3
	defaultAlignment = 32
)

// KV is one GGUF metadata pair. Value is one of uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64, or a slice
// of one of them (a GGUF array).
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor. Shape lists ggml's ne, innermost dimension
// first: a {n_embd, n_vocab} embedding holds n_vocab rows of n_embd floats.
// Data is encoded as Type (the zero value is F32).
type Tensor struct {
	Name  string
	Shape []int64
	Type  TensorType
	Data  []float32
}

// File is a GGUF v3 file: metadata, tensor infos, then the aligned data.
type File struct {
	KV      []KV
	Tensors []Tensor
}

// Alignment returns the data alignment the file declares through
// general.alignment, or the GGUF default.
func (f *File) Alignment() int {
	for _, kv := range f.KV {
		if kv.Key == "general.alignment" {
			if a, ok := kv.Value.(uint32); ok {
				return int(a)
			}
		}
	}
	return defaultAlignment
}

// WriteTo encodes f in GGUF v3, little-endian, the layout gguf.cpp reads:
// header, key/value pairs, tensor infos whose offsets are relative to the
// data section, padding, then each tensor padded to the alignment.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	align := f.Alignment()
	if align <= 0 || align&(align-1) != 0 {
		return 0, fmt.Errorf("gguf: alignment %d is not a power of two", align)
	}
	cw := &countingWriter{w: bufio.NewWriter(w)}
	e := &encoder{w: cw}
	e.raw([]byte(ggufMagic))
	e.u32(ggufVersion)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(f.KV)))
	for _, kv := range f.KV {
		e.str(kv.Key)
		e.value(kv.Value, true)
	}
	var offset uint64
	for _, t := range f.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		if n != int64(len(t.Data)) || len(t.Shape) == 0 || len(t.Shape) > 4 {
			return cw.n, fmt.Errorf("gguf: tensor %q: shape %v does not hold %d values", t.Name, t.Shape, len(t.Data))
		}
		switch {
		case t.Type != F32 && t.Type != Q8_0:
			return cw.n, fmt.Errorf("gguf: tensor %q: unsupported type %d", t.Name, t.Type)
		case t.Type == Q8_0 && t.Shape[0]%q8Block != 0:
			return cw.n, fmt.Errorf("gguf: tensor %q: Q8_0 rows of %d are not whole blocks of %d", t.Name, t.Shape[0], q8Block)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(offset)
		offset += pad(uint64(t.Type.size(len(t.Data))), align)
	}
	e.zeros(int(pad(uint64(cw.n), align)) - int(cw.n))
	for _, t := range f.Tensors {
		if t.Type == Q8_0 {
			e.q8(t.Data)
		} else {
			for _, v := range t.Data {
				e.u32(math.Float32bits(v))
			}
		}
		size := t.Type.size(len(t.Data))
		e.zeros(int(pad(uint64(size), align)) - size)
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, e.err
}

func pad(n uint64, align int) uint64 {
	a := uint64(align)
	return (n + a - 1) / a * a
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder keeps the first error, so WriteTo reads as the format it writes.
type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) zeros(n int) {
	if n > 0 {
		e.raw(make([]byte, n))
	}
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.raw(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.raw(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

// value writes v's type tag (when tagged) and its encoding.
func (e *encoder) value(v any, tagged bool) {
	tag := func(t uint32) {
		if tagged {
			e.u32(t)
		}
	}
	switch v := v.(type) {
	case uint8:
		tag(typeUint8)
		e.raw([]byte{v})
	case int8:
		tag(typeInt8)
		e.raw([]byte{byte(v)})
	case uint16:
		tag(typeUint16)
		e.raw(binary.LittleEndian.AppendUint16(nil, v))
	case int16:
		tag(typeInt16)
		e.raw(binary.LittleEndian.AppendUint16(nil, uint16(v)))
	case uint32:
		tag(typeUint32)
		e.u32(v)
	case int32:
		tag(typeInt32)
		e.u32(uint32(v))
	case float32:
		tag(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		tag(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		tag(typeString)
		e.str(v)
	case uint64:
		tag(typeUint64)
		e.u64(v)
	case int64:
		tag(typeInt64)
		e.u64(uint64(v))
	case float64:
		tag(typeFloat64)
		e.u64(math.Float64bits(v))
	case []string:
		array(e, typeString, v)
	case []int32:
		array(e, typeInt32, v)
	case []uint32:
		array(e, typeUint32, v)
	case []float32:
		array(e, typeFloat32, v)
	default:
		if e.err == nil {
			e.err = fmt.Errorf("gguf: unsupported value type %T", v)
		}
	}
}

func array[T any](e *encoder, elem uint32, vs []T) {
	e.u32(typeArray)
	e.u32(elem)
	e.u64(uint64(len(vs)))
	for _, v := range vs {
		e.value(v, false)
	}
}

// q8 encodes data as Q8_0 blocks the way ggml's quantize_row_q8_0_ref
// does: scale d = max|x|/127 stored as f16, then round(x/d) as int8.
func (e *encoder) q8(data []float32) {
	block := make([]byte, 2+q8Block)
	for len(data) > 0 {
		xs := data[:q8Block]
		data = data[q8Block:]
		var amax float32
		for _, x := range xs {
			amax = max(amax, float32(math.Abs(float64(x))))
		}
		d := amax / 127
		inv := float32(0)
		if d != 0 {
			inv = 1 / d
		}
		binary.LittleEndian.PutUint16(block, f16(d))
		for i, x := range xs {
			block[2+i] = byte(int8(math.Round(float64(x * inv))))
		}
		e.raw(block)
	}
}

// f16 converts a non-negative float32 to IEEE half precision, rounding to
// nearest even; Q8_0 scales are never negative.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 0x1f:
		return 0x7c00
	case exp <= 0:
		if exp < -10 {
			return 0
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		if rem := mant & (1<<shift - 1); rem > 1<<(shift-1) || (rem == 1<<(shift-1) && h&1 == 1) {
			h++
		}
		return uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return uint16(h)
}
