package semantic

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/binread"
)

// Embedder turns text into a vector. Lifecycle: Open → Embed, from any
// number of goroutines → Close; Embed after Close fails.
type Embedder interface {
	Embed(text string) ([]float32, error)
	Close() error
}

// Vectors holds the frozen embeddings of a tool set: row i of Data, Dim
// floats long, is the vector of IDs[i].
type Vectors struct {
	Model       string // model path as configured when the vectors were built
	ModelSHA256 string // lowercase hex sha256 of that model file
	Dim         int
	IDs         []string
	Data        []float32
}

// Hit is one nearest neighbour: a tool ID and its cosine similarity.
type Hit struct {
	ID    string
	Score float32
}

// ToolText is the text a tool is embedded from, at emit time and whenever
// a manual registered at run time needs vectors.
func ToolText(name, description string) string {
	return strings.TrimSpace(name + " " + description)
}

// FileSHA256 returns the lowercase hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BuildVectors embeds texts[i] as the vector of ids[i] and records the
// model they came from.
func BuildVectors(e Embedder, ids, texts []string, modelPath, sha string) (*Vectors, error) {
	if len(ids) != len(texts) {
		return nil, fmt.Errorf("build vectors: %d ids but %d texts", len(ids), len(texts))
	}
	v := &Vectors{Model: modelPath, ModelSHA256: strings.ToLower(sha), IDs: slices.Clone(ids)}
	for i, text := range texts {
		vec, err := e.Embed(text)
		if err != nil {
			return nil, fmt.Errorf("build vectors: embed %q: %w", ids[i], err)
		}
		if i == 0 {
			v.Dim = len(vec)
			v.Data = make([]float32, 0, len(ids)*len(vec))
		}
		if len(vec) != v.Dim || len(vec) == 0 {
			return nil, fmt.Errorf("build vectors: %q has %d dimensions, want %d", ids[i], len(vec), v.Dim)
		}
		v.Data = append(v.Data, vec...)
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("build vectors: %w", err)
	}
	return v, nil
}

// Validate checks that the shape is consistent and the IDs unique.
func (v *Vectors) Validate() error {
	if v.Dim < 0 || (len(v.IDs) > 0 && v.Dim == 0) || len(v.Data) != len(v.IDs)*v.Dim {
		return fmt.Errorf("%w: %d ids of %d dimensions need %d values, have %d", ErrFormat, len(v.IDs), v.Dim, len(v.IDs)*v.Dim, len(v.Data))
	}
	seen := make(map[string]bool, len(v.IDs))
	for _, id := range v.IDs {
		if seen[id] {
			return fmt.Errorf("%w: duplicate id %q", ErrFormat, id)
		}
		seen[id] = true
	}
	return nil
}

// Check verifies that the configured model (path and sha256) is the one
// the vectors were built with. Only the hash decides: a model that moved
// is still the same model.
func (v *Vectors) Check(modelPath, sha string) error {
	if strings.EqualFold(v.ModelSHA256, sha) {
		return nil
	}
	return fmt.Errorf("%w: the model %s is configured with sha256 %s, but the frozen tool vectors were computed with %s (sha256 %s): "+
		"regenerate them with this model (make generate SEMANTIC=1) or configure the model they were built with",
		ErrModelMismatch, modelPath, sha, v.Model, v.ModelSHA256)
}

// Query embeds q with e and returns its k nearest tools (see Nearest).
func (v *Vectors) Query(e Embedder, q string, k int) ([]Hit, error) {
	vec, err := e.Embed(q)
	if err != nil {
		return nil, fmt.Errorf("semantic query: %w", err)
	}
	if len(vec) != v.Dim {
		return nil, fmt.Errorf("%w: the model returns %d dimensions but the frozen vectors have %d: regenerate them with this model",
			ErrModelMismatch, len(vec), v.Dim)
	}
	return v.Nearest(vec, k), nil
}

// Nearest returns the k tools most similar to query by cosine similarity,
// best first, ties by ID; k <= 0 returns all. A query of the wrong
// dimension matches nothing.
func (v *Vectors) Nearest(query []float32, k int) []Hit {
	if len(query) != v.Dim || v.Dim == 0 {
		return nil
	}
	qn := norm(query)
	hits := make([]Hit, len(v.IDs))
	for i, id := range v.IDs {
		row := v.Data[i*v.Dim : (i+1)*v.Dim]
		var dot float64
		for j, x := range row {
			dot += float64(x) * float64(query[j])
		}
		score := 0.0
		if d := qn * norm(row); d > 0 {
			score = dot / d
		}
		hits[i] = Hit{ID: id, Score: float32(score)}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if k > 0 && k < len(hits) {
		hits = hits[:k]
	}
	return hits
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// The binary form, little-endian: magic, then strings as a uint32 length
// and bytes: model, sha256; uint32 dim, uint32 count, count ids, then
// count*dim float32. Plain and fixed, so generated/ diffs only when the
// vectors do.
const vectorsMagic = "KILNVEC1"

// MarshalBinary encodes v for generated/; Load decodes it.
func (v *Vectors) MarshalBinary() ([]byte, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	size := len(vectorsMagic) + 16 + len(v.Model) + len(v.ModelSHA256) + 4*len(v.Data)
	for _, id := range v.IDs {
		size += 4 + len(id)
	}
	b := make([]byte, 0, size)
	b = append(b, vectorsMagic...)
	str := func(s string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	str(v.Model)
	str(v.ModelSHA256)
	b = binary.LittleEndian.AppendUint32(b, uint32(v.Dim))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v.IDs)))
	for _, id := range v.IDs {
		str(id)
	}
	for _, x := range v.Data {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b, nil
}

// UnmarshalBinary decodes the form MarshalBinary writes.
func (v *Vectors) UnmarshalBinary(b []byte) error {
	d := binread.New(b, ErrFormat)
	if string(d.Next(len(vectorsMagic))) != vectorsMagic {
		return fmt.Errorf("%w: not a Kiln vectors file", ErrFormat)
	}
	out := Vectors{Model: d.Str(), ModelSHA256: d.Str()}
	out.Dim = int(d.U32())
	n := int(d.U32())
	// Each id takes at least 4 bytes: a count beyond that is corrupt, and
	// checking first keeps a bad count from allocating gigabytes.
	if d.Err == nil && n > len(d.B)/4 {
		d.Err = fmt.Errorf("%w: %d ids in %d bytes", ErrFormat, n, len(d.B))
	}
	for i := 0; i < n && d.Err == nil; i++ {
		out.IDs = append(out.IDs, d.Str())
	}
	if d.Err == nil && uint64(len(d.B)) != 4*uint64(n)*uint64(out.Dim) {
		d.Err = fmt.Errorf("%w: %d ids of %d dimensions need %d bytes of data, have %d", ErrFormat, n, out.Dim, 4*n*out.Dim, len(d.B))
	}
	if d.Err != nil {
		return d.Err
	}
	out.Data = make([]float32, n*out.Dim)
	for i := range out.Data {
		out.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.B[4*i:]))
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*v = out
	return nil
}

// Load decodes frozen vectors, typically embedded in generated/.
func Load(b []byte) (*Vectors, error) {
	v := new(Vectors)
	if err := v.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return v, nil
}
