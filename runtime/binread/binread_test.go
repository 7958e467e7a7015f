package binread

import (
	"errors"
	"testing"
)

var errFormat = errors.New("bad format")

func TestReader(t *testing.T) {
	r := New([]byte{3, 0, 0, 0, 'a', 'b', 'c', 7, 0, 0, 0}, errFormat)
	if s := r.Str(); s != "abc" {
		t.Errorf("Str = %q", s)
	}
	if n := r.U32(); n != 7 || r.Err != nil || len(r.B) != 0 {
		t.Errorf("U32 = %d, err %v, left %d", n, r.Err, len(r.B))
	}
	if n := r.U32(); n != 0 || !errors.Is(r.Err, errFormat) {
		t.Errorf("short read: %d, %v; want 0 and an error wrapping the sentinel", n, r.Err)
	}
	if p := r.Next(0); p != nil {
		t.Errorf("a read after an error returned %v", p)
	}
}
