package static

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testVectors is a tiny GloVe-style file: words in frequency order, 4
// dimensions; "sum", "total" and "add" share an axis, as do "web" and
// "internet".
const testVectors = `the 0.5 0.5 0.5 0.5
a 0.4 0.5 0.6 0.5
sum 1 0.1 0 0
total 0.9 0.2 0 0
add 0.95 0 0.1 0
web 0 1 0 0.1
internet 0.1 0.9 0 0
file 0 0 1 0
write 0 0.1 0.9 0
weather 0 0 0 1
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readTest(t *testing.T) *Raw {
	t.Helper()
	r, err := Read(writeFile(t, "vectors.txt", testVectors))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadFormats(t *testing.T) {
	text := readTest(t)
	if text.Dim != 4 || len(text.Words) != 10 || len(text.Vecs) != 40 || text.Words[2] != "sum" {
		t.Fatalf("text form: dim %d, %d words, %d values, %v", text.Dim, len(text.Words), len(text.Vecs), text.Words)
	}
	// The wink JSON keeps two trailing values per vector (l2 norm, index)
	// that Read drops, and has keys before and after "vectors".
	wink := `{"precision":8,"dimensions":2,"words":["x","y\u00e9"],"vectors":{"x":[1,-2.5e-1,1.03,0],"y\u00e9":[0.5,0.5,0.7,1]},"unkVector":[0,0,0,-1]}`
	w, err := Read(writeFile(t, "wink.json", wink))
	if err != nil {
		t.Fatal(err)
	}
	want := &Raw{Dim: 2, Words: []string{"x", "yé"}, Vecs: []float32{1, -0.25, 0.5, 0.5}}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("wink form (-want +got):\n%s", diff)
	}
	w2v, err := Read(writeFile(t, "w2v.txt", "2 2\nx 1 0\ny 0 1\n"))
	if err != nil || len(w2v.Words) != 2 || w2v.Dim != 2 {
		t.Errorf("word2vec header: %+v, %v", w2v, err)
	}
	for name, bad := range map[string]string{
		"ragged":      "x 1 0\ny 1\n",
		"not a float": "x 1 zero\n",
		"empty":       "\n",
		"wink short":  `{"dimensions":3,"vectors":{"x":[1,2]}}`,
		"wink order":  `{"vectors":{"x":[1,2]},"dimensions":1}`,
		"wink cut":    `{"dimensions":1,"vectors":{"x":[1`,
	} {
		if _, err := Read(writeFile(t, "bad", bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %v, want ErrFormat", name, err)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"listFiles":          {"list", "files"},
		"get_HTMLPage v2":    {"get", "html", "page", "v", "2"},
		"Sum the TOTAL, 東京!": {"sum", "the", "total", "東京"},
		"":                   nil,
	} {
		if diff := cmp.Diff(want, Words(in)); diff != "" {
			t.Errorf("Words(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// TestQuantizeRoundTrip bounds the int8 error: each value within half a
// step (max/254), so a cosine moves by well under 0.01.
func TestQuantizeRoundTrip(t *testing.T) {
	raw := readTest(t)
	tb := Cut(raw, "v.txt", "ab", nil, len(raw.Words))
	for i := range raw.Words {
		orig := raw.Vecs[i*raw.Dim : (i+1)*raw.Dim]
		var m float64
		for _, x := range orig {
			m = max(m, math.Abs(float64(x)))
		}
		for j, x := range orig {
			got := float64(tb.Q[i*tb.Dim+j]) * float64(tb.Scales[i])
			if d := math.Abs(got - float64(x)); d > m/254+1e-6 {
				t.Errorf("%s[%d]: %v became %v", raw.Words[i], j, x, got)
			}
		}
	}
	zero := Cut(&Raw{Dim: 2, Words: []string{"z"}, Vecs: []float32{0, 0}}, "", "", nil, 1)
	if zero.Scales[0] != 0 || zero.Q[0] != 0 {
		t.Errorf("a zero vector quantized to scale %v, %v", zero.Scales[0], zero.Q)
	}
}

func TestCutAndMarshal(t *testing.T) {
	raw := readTest(t)
	texts := []string{"web_search: search the internet", "write_file: write a file", "getWeather: the weather"}
	tb := CutFor(raw, "v.txt", strings.Repeat("ab", 32), texts, 2)
	// The two most frequent words, then the tools' words in file order.
	want := []string{"the", "a", "web", "internet", "file", "write", "weather"}
	if diff := cmp.Diff(want, tb.Words); diff != "" {
		t.Errorf("cut words (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint32{0, 1, 5, 6, 7, 8, 9}, tb.Ranks); diff != "" {
		t.Errorf("ranks (-want +got):\n%s", diff)
	}
	if len(tb.Mean) != 4 || len(tb.PC) != 4 {
		t.Fatalf("Fit set mean %v, pc %v", tb.Mean, tb.PC)
	}
	b, err := tb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := CutFor(raw, "v.txt", strings.Repeat("ab", 32), texts, 2).MarshalBinary()
	if string(b) != string(again) {
		t.Error("two cuts of the same input marshal differently")
	}
	got, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tb, got, cmp.AllowUnexported(Table{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for i := range len(b) {
		if _, err := Load(b[:i]); !errors.Is(err, ErrFormat) {
			t.Fatalf("Load of the first %d bytes: %v, want ErrFormat", i, err)
		}
	}
	if _, err := Load(append(b, 0)); !errors.Is(err, ErrFormat) {
		t.Errorf("trailing byte: %v", err)
	}
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

func TestEmbed(t *testing.T) {
	raw := readTest(t)
	tb := Cut(raw, "v.txt", "", nil, len(raw.Words))
	e := NewEmbedder(tb)
	q, _ := e.Embed("the internet")
	sum, _ := e.Embed("calculate the sum")
	web, _ := e.Embed("search the web")
	if cosine(q, web) <= cosine(q, sum) {
		t.Errorf("\"the internet\" is nearer the sum tool (%.3f) than the web tool (%.3f)", cosine(q, sum), cosine(q, web))
	}
	if v, _ := e.Embed("zzz qqq"); !isZero(v) {
		t.Errorf("a text of unknown words embeds as %v, want zero", v)
	}
	if k, n := e.Known("the Internet zzz"); k != 2 || n != 3 {
		t.Errorf("Known = %d of %d, want 2 of 3", k, n)
	}
	// "the" weighs far less than a rarer word: the mean follows "web".
	if w0, w1 := e.weight[tb.index["the"]], e.weight[tb.index["web"]]; w0 >= w1 {
		t.Errorf("weight of the %v >= weight of web %v", w0, w1)
	}
}

// TestFit: after Fit, the fitted texts' embeddings are centred and have
// no component along PC, which is a unit vector.
func TestFit(t *testing.T) {
	raw := readTest(t)
	texts := []string{"calculate the sum", "search the web", "write a file", "weather forecast", "add a total", "the internet"}
	tb := CutFor(raw, "v.txt", "", texts, len(raw.Words))
	e := NewEmbedder(tb)
	mean := make([]float64, tb.Dim)
	var pcNorm float64
	for _, x := range tb.PC {
		pcNorm += float64(x) * float64(x)
	}
	if math.Abs(pcNorm-1) > 1e-4 {
		t.Errorf("|PC|² = %v, want 1", pcNorm)
	}
	for _, s := range texts {
		v, _ := e.Embed(s)
		var p float64
		for j, x := range v {
			mean[j] += float64(x) / float64(len(texts))
			p += float64(x) * float64(tb.PC[j])
		}
		if math.Abs(p) > 1e-4 {
			t.Errorf("%q keeps %v along PC", s, p)
		}
	}
	for j, m := range mean {
		if math.Abs(m) > 1e-4 {
			t.Errorf("mean[%d] = %v after Fit, want 0", j, m)
		}
	}
}

func BenchmarkEmbedQuery(b *testing.B) {
	raw := &Raw{Dim: 100}
	for i := range 30000 {
		raw.Words = append(raw.Words, "w"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676%26)))
		for j := range 100 {
			raw.Vecs = append(raw.Vecs, float32((i*31+j*17)%200-100)/100)
		}
	}
	e := NewEmbedder(Cut(raw, "", "", nil, len(raw.Words)))
	q := "find the weather forecast for " + raw.Words[100] + " and " + raw.Words[2000] + " then save it to a file"
	b.ReportAllocs()
	for b.Loop() {
		e.Embed(q)
	}
}
