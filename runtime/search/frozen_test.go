package search

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

var roundTripQueries = []string{
	"search the web", "read a file", "weather forecast city", "websrch", "serch", "alrts",
	"天气预报", "github issue create", "", "list directory entries",
	"remove a document", "keyword search",
}

func TestLoadRoundTrip(t *testing.T) {
	odd := Doc{ID: "x.y", Backend: "odd.name", Name: "tool", Description: "An ID that is not backend.name."}
	for name, cfg := range map[string]Config{
		"default":   DefaultConfig(),
		"fieldnorm": func() Config { c := DefaultConfig(); c.FieldNorm = true; c.Stem = StemPorter; return c }(),
		"stopoff-fb": func() Config {
			c := DefaultConfig()
			c.QueryStop = false
			c.Feedback = Feedback{Docs: 3, Terms: 7, Weight: 0.5}
			return c
		}(),
		"plain": {K1: 1.2, B: 0.75, Weights: [numFields]float64{FieldName: 1, FieldDescription: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			built := BuildWith(append(tryCorpus(), odd), cfg)
			data, err := built.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := Load(data)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, q := range roundTripQueries {
				if diff := cmp.Diff(built.Search(q, Options{}), loaded.Search(q, Options{})); diff != "" {
					t.Errorf("Search(%q) built vs loaded (-want +got):\n%s", q, diff)
				}
			}
			for _, b := range built.base.backendNames {
				for _, q := range []string{"", "files", "directory search"} {
					want := built.TryAlso(b, q, maxSuggest)
					if len(want) == 0 && q == "" && b != "tie" {
						t.Errorf("TryAlso(%q): built index has none", b)
					}
					if diff := cmp.Diff(want, loaded.TryAlso(b, q, maxSuggest)); diff != "" {
						t.Errorf("TryAlso(%q, %q) built vs loaded (-want +got):\n%s", b, q, diff)
					}
				}
			}
			if diff := cmp.Diff(allIDs(built), allIDs(loaded)); diff != "" {
				t.Errorf("docs (-want +got):\n%s", diff)
			}
			for i := range built.Len() {
				if diff := cmp.Diff(built.Doc(i), loaded.Doc(i)); diff != "" {
					t.Errorf("Doc(%d) (-want +got):\n%s", i, diff)
				}
			}
			if diff := cmp.Diff(built.Config(), loaded.Config()); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			again, err := loaded.MarshalBinary()
			if err != nil || !bytes.Equal(data, again) {
				t.Errorf("re-marshal differs (err %v)", err)
			}
			// A loaded base takes run-time tools like a built one.
			extra := []Doc{NewDoc("deepl", "translate", "", "Translate text.", nil)}
			if diff := cmp.Diff(built.With(extra, "web").Search("translate web", Options{}), loaded.With(extra, "web").Search("translate web", Options{})); diff != "" {
				t.Errorf("overlay on loaded (-want +got):\n%s", diff)
			}
		})
	}
}

// Load uses aligned weights in place and copies misaligned ones; both
// read the same index.
func TestLoadWeightsInPlace(t *testing.T) {
	data, err := Build(tryCorpus()).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	payload := string(data[headerLen:]) // a new heap string: aligned
	inPlace, err := decodePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	shifted := ("x" + payload)[1:]
	copied, err := decodePayload(shifted)
	if err != nil {
		t.Fatal(err)
	}
	within := func(w []float32, s string) bool {
		p, lo := uintptr(unsafe.Pointer(&w[0])), uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p < lo+uintptr(len(s))
	}
	for name, f := range map[string]func(s *segment) []float32{
		"tools":    func(s *segment) []float32 { return s.tools.postW },
		"exp":      func(s *segment) []float32 { return s.exp.postW },
		"backends": func(s *segment) []float32 { return s.backends.postW },
	} {
		w, c := f(inPlace.base), f(copied.base)
		if len(w) == 0 {
			t.Fatalf("%s: no weights", name)
		}
		if littleEndian && !within(w, payload) {
			t.Errorf("%s: aligned weights were copied", name)
		}
		if within(c, shifted) {
			t.Errorf("%s: misaligned weights were used in place", name)
		}
		if !slices.Equal(w, c) {
			t.Errorf("%s: weights differ between aligned and misaligned data", name)
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	docs := corpus()
	a, _ := Build(docs).MarshalBinary()
	rev := make([]Doc, len(docs))
	for i, d := range docs {
		rev[len(docs)-1-i] = d
	}
	b, _ := Build(rev).MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Error("MarshalBinary depends on input order")
	}
}

func TestLoadErrors(t *testing.T) {
	good, err := Build(corpus()).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	reseal := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[len(magic)+4:], crcOf(b[headerLen:]))
		return b
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrFormat},
		{"magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), ErrFormat},
		{"version", mutate(func(b []byte) []byte { b[len(magic)]++; return b }), ErrVersion},
		{"flipped byte", mutate(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }), ErrCorrupt},
		{"truncated", good[:len(good)-7], ErrCorrupt},
		{"trailing", reseal(append(bytes.Clone(good), 0)), ErrCorrupt},
		{"truncated resealed", reseal(bytes.Clone(good[:len(good)-7])), ErrCorrupt},
		{"header only", reseal(bytes.Clone(good[:headerLen])), ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := Load(tc.data)
			if !errors.Is(err, tc.want) || ix != nil {
				t.Errorf("Load = %v, %v; want %v", ix, err, tc.want)
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	// A small seed keeps minimizing each new input (which by default may
	// take a minute per input) short.
	good, err := Build(corpus()[8:11]).MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[headerLen:])
	f.Add(good[:len(good)/2])
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checksum stops random bytes at Load's door, so also feed
		// them to the payload decoder it guards.
		payload := func(b []byte) (*Index, error) { return decodePayload(string(b)) }
		for _, decode := range []func([]byte) (*Index, error){Load, payload} {
			ix, err := decode(data)
			if err != nil {
				if ix != nil {
					t.Fatal("index returned with an error")
				}
				continue
			}
			for _, q := range roundTripQueries {
				ix.Search(q, Options{Limit: 3})
			}
			for i := range ix.Len() {
				ix.DocByID(ix.Doc(i).ID)
			}
			for _, b := range ix.base.backendNames {
				ix.TryAlso(b, "file web", maxSuggest)
			}
			if _, err := ix.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
			ix.With([]Doc{NewDoc("zz", "t", "", "text", nil)}, "web").Search("text web", Options{})
		}
	})
}
