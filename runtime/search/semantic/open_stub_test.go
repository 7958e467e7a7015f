//go:build !semantic

package semantic

import (
	"errors"
	"testing"
)

func TestOpenUnavailable(t *testing.T) {
	if Available {
		t.Fatal("Available is true in a build without the semantic tag")
	}
	e, err := Open("model.gguf", "", 1)
	if !errors.Is(err, ErrUnavailable) || e != nil {
		t.Errorf("Open = %v, %v; want nil, ErrUnavailable", e, err)
	}
}
