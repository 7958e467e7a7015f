// Package binread reads the little-endian, length-prefixed files that the
// frozen search tiers write (semantic vectors, static word vectors). The
// first short read sticks: later reads return zero values, so a decoder
// checks Err once at the end instead of after every field.
package binread

import (
	"encoding/binary"
	"fmt"
)

// Reader consumes B from the front.
type Reader struct {
	// B is what is left to read.
	B []byte
	// Err is the first error, wrapping the sentinel given to New.
	Err    error
	format error
}

// New reads b; a truncated b yields an error wrapping format.
func New(b []byte, format error) *Reader { return &Reader{B: b, format: format} }

// Next returns the next n bytes, or nil once an error has occurred.
func (r *Reader) Next(n int) []byte {
	if r.Err != nil {
		return nil
	}
	if n < 0 || n > len(r.B) {
		r.Err = fmt.Errorf("%w: truncated", r.format)
		return nil
	}
	p := r.B[:n]
	r.B = r.B[n:]
	return p
}

// U32 reads a little-endian uint32.
func (r *Reader) U32() uint32 {
	if p := r.Next(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// Str reads a string prefixed by its U32 length.
func (r *Reader) Str() string { return string(r.Next(int(r.U32()))) }
