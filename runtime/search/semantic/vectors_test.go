package semantic

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// wordEmbedder is a bag of words with one axis per word of its
// vocabulary: deterministic, collision-free, no model needed.
type wordEmbedder struct {
	vocab  []string
	fail   string // text whose embedding fails
	shrink string // text that gets one dimension less
}

func (w wordEmbedder) Embed(text string) ([]float32, error) {
	if text == w.fail {
		return nil, errors.New("boom")
	}
	v := make([]float32, len(w.vocab))
	for _, word := range strings.Fields(strings.ToLower(text)) {
		if i := slices.Index(w.vocab, word); i >= 0 {
			v[i]++
		}
	}
	if text == w.shrink {
		v = v[:len(v)-1]
	}
	return v, nil
}

func (wordEmbedder) Close() error { return nil }

func sample() *Vectors {
	return &Vectors{
		Model: "models/mini.gguf", ModelSHA256: strings.Repeat("ab", 32), Dim: 2,
		IDs:  []string{"fs.read_file", "weather.get", "fs.write_file", "ünï.cödé"},
		Data: []float32{1, 0, 0, 1, 1, 1, -1, 0},
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		v    *Vectors
	}{
		{"empty", &Vectors{}},
		{"no model", &Vectors{Dim: 1, IDs: []string{"a"}, Data: []float32{0.5}}},
		{"sample", sample()},
		{"extremes", &Vectors{Model: "m", ModelSHA256: "x", Dim: 3, IDs: []string{"", "b"},
			Data: []float32{math.MaxFloat32, -math.SmallestNonzeroFloat32, float32(math.Inf(1)), 0, float32(math.Copysign(0, -1)), 1e-20}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.v.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary: %v", err)
			}
			got, err := Load(b)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.v, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			again, err := got.MarshalBinary()
			if err != nil || string(again) != string(b) {
				t.Errorf("re-marshal differs (err %v)", err)
			}
		})
	}
}

func TestLoadRejectsCorruptInput(t *testing.T) {
	good, err := sample().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Every proper prefix is truncated somewhere and must fail cleanly.
	for n := range len(good) {
		if _, err := Load(good[:n]); !errors.Is(err, ErrFormat) {
			t.Fatalf("Load of %d/%d bytes: err = %v, want ErrFormat", n, len(good), err)
		}
	}
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	countAt := len(vectorsMagic) + 4 + len("models/mini.gguf") + 4 + 64 + 4
	tests := []struct {
		name string
		in   []byte
	}{
		{"bad magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"trailing bytes", mutate(func(b []byte) []byte { return append(b, 0, 0, 0, 0) })},
		{"huge count", mutate(func(b []byte) []byte { b[countAt+3] = 0x7f; return b })},
		{"duplicate id", func() []byte {
			b, _ := (&Vectors{Dim: 1, IDs: []string{"a", "b"}, Data: []float32{1, 2}}).MarshalBinary()
			return []byte(strings.Replace(string(b), "\x01\x00\x00\x00b", "\x01\x00\x00\x00a", 1))
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load(tc.in); !errors.Is(err, ErrFormat) {
				t.Errorf("Load: err = %v, want ErrFormat", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		v    Vectors
		ok   bool
	}{
		{"empty", Vectors{}, true},
		{"sample", *sample(), true},
		{"short data", Vectors{Dim: 2, IDs: []string{"a"}, Data: []float32{1}}, false},
		{"zero dim with ids", Vectors{IDs: []string{"a"}}, false},
		{"negative dim", Vectors{Dim: -1}, false},
		{"duplicate", Vectors{Dim: 1, IDs: []string{"a", "a"}, Data: []float32{1, 2}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrFormat)) {
				t.Errorf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if _, merr := tc.v.MarshalBinary(); (merr == nil) != tc.ok {
				t.Errorf("MarshalBinary = %v, want ok=%v", merr, tc.ok)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	r := float32(1 / math.Sqrt2)
	tests := []struct {
		name  string
		query []float32
		k     int
		want  []Hit
	}{
		{"all", []float32{1, 0}, 0, []Hit{{"fs.read_file", 1}, {"fs.write_file", r}, {"weather.get", 0}, {"ünï.cödé", -1}}},
		{"scale invariant", []float32{5, 0}, 2, []Hit{{"fs.read_file", 1}, {"fs.write_file", r}}},
		{"ties by id", []float32{1, 1}, 3, []Hit{{"fs.write_file", 1}, {"fs.read_file", r}, {"weather.get", r}}},
		{"k beyond size", []float32{0, -1}, 10, []Hit{{"fs.read_file", 0}, {"ünï.cödé", 0}, {"fs.write_file", -r}, {"weather.get", -1}}},
		{"zero query", []float32{0, 0}, 1, []Hit{{"fs.read_file", 0}}},
		{"wrong dimension", []float32{1, 0, 0}, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sample().Nearest(tc.query, tc.k)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("Nearest(%v, %d) (-want +got):\n%s", tc.query, tc.k, diff)
			}
		})
	}
	if got := (&Vectors{}).Nearest(nil, 3); got != nil {
		t.Errorf("Nearest on empty vectors = %v, want nil", got)
	}
}

func TestCheck(t *testing.T) {
	v := sample()
	if err := v.Check("elsewhere/mini.gguf", strings.ToUpper(v.ModelSHA256)); err != nil {
		t.Errorf("Check with the same hash in another case and path: %v", err)
	}
	other := strings.Repeat("cd", 32)
	err := v.Check("models/other.gguf", other)
	if !errors.Is(err, ErrModelMismatch) {
		t.Fatalf("Check = %v, want ErrModelMismatch", err)
	}
	for _, want := range []string{other, v.ModelSHA256, "models/other.gguf", v.Model, "make generate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %q does not mention %q", err, want)
		}
	}
}

func TestBuildVectors(t *testing.T) {
	e := wordEmbedder{vocab: strings.Fields("read a file weather today write")}
	ids := []string{"a.x", "b.y", "c.z"}
	texts := []string{"read a file", "weather today", "write a file"}
	v, err := BuildVectors(e, ids, texts, "m.gguf", "ABCD")
	if err != nil {
		t.Fatalf("BuildVectors: %v", err)
	}
	want := &Vectors{Model: "m.gguf", ModelSHA256: "abcd", Dim: len(e.vocab), IDs: ids}
	for _, text := range texts {
		row, _ := e.Embed(text)
		want.Data = append(want.Data, row...)
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("BuildVectors (-want +got):\n%s", diff)
	}
	hits, err := v.Query(e, "file", 2)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if len(hits) != 2 || hits[0].ID == "b.y" || hits[1].ID == "b.y" {
		t.Errorf("Query(file) = %v: the only tool without the word ranks in the top two", hits)
	}

	errTests := []struct {
		name  string
		e     Embedder
		ids   []string
		texts []string
	}{
		{"length mismatch", e, ids, texts[:2]},
		{"embed error", wordEmbedder{vocab: e.vocab, fail: "weather today"}, ids, texts},
		{"dimension change", wordEmbedder{vocab: e.vocab, shrink: "write a file"}, ids, texts},
		{"zero dimensions", wordEmbedder{vocab: []string{"read"}, shrink: "read a file"}, ids, texts},
		{"duplicate ids", e, []string{"a", "a"}, texts[:2]},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := BuildVectors(tc.e, tc.ids, tc.texts, "m", "s"); err == nil {
				t.Errorf("BuildVectors = %+v, want an error", v)
			}
		})
	}
}

func TestQueryDimensionMismatch(t *testing.T) {
	_, err := sample().Query(wordEmbedder{vocab: []string{"x", "y", "z"}}, "anything", 1)
	if !errors.Is(err, ErrModelMismatch) {
		t.Errorf("Query with a 3-dimension model on 2-dimension vectors: err = %v, want ErrModelMismatch", err)
	}
	if _, err := sample().Query(wordEmbedder{vocab: []string{"x", "y"}, fail: "x"}, "x", 1); err == nil {
		t.Error("Query ignored an embedding error")
	}
}

func TestToolText(t *testing.T) {
	tests := []struct{ name, desc, want string }{
		{"read_file", "Read a file.", "read_file Read a file."},
		{"ping", "", "ping"},
		{"x", "  spaced  ", "x   spaced"},
	}
	for _, tc := range tests {
		if got := ToolText(tc.name, tc.desc); got != tc.want {
			t.Errorf("ToolText(%q, %q) = %q, want %q", tc.name, tc.desc, got, tc.want)
		}
	}
}

func TestFileSHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.gguf")
	content := []byte("GGUF not really a model")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	got, err := FileSHA256(path)
	if err != nil || got != hex.EncodeToString(sum[:]) {
		t.Errorf("FileSHA256 = %q, %v; want %x", got, err, sum)
	}
	if _, err := FileSHA256(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FileSHA256 of a missing file: err = %v, want ErrNotExist", err)
	}
}
