package semantictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"unicode"
)

// BERT sizes a generated model; zero sizes take Tiny's.
type BERT struct {
	Embd    int    // embedding length (n_embd)
	Layers  int    // transformer blocks
	Heads   int    // attention heads; Embd must be a multiple
	FF      int    // feed-forward length
	Context int    // trained context length (position embeddings)
	Seed    uint64 // weight seed
	// Q8 stores the weight matrices as Q8_0, as the quantized models users
	// download are; row lengths (Embd, FF) must then be multiples of 32.
	Q8 bool
}

// Tiny is the test model: small enough to write in a millisecond and load
// in a few, big enough to exercise every tensor of llama.cpp's BERT graph.
var Tiny = BERT{Embd: 32, Layers: 2, Heads: 2, FF: 64, Context: 256, Seed: 1}

// MiniLM has the shape and quantization of all-MiniLM-L6-v2 Q8_0 (384
// wide, 6 layers, 12 heads, 512 positions) with random weights: it costs
// what the real model costs to run, for benchmarks, not for meaning.
var MiniLM = BERT{Embd: 384, Layers: 6, Heads: 12, FF: 1536, Context: 512, Seed: 1, Q8: true}

// Special tokens come first, at fixed ids the metadata also names.
var specials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

const (
	padID, unkID, clsID, sepID, maskID = 0, 1, 2, 3, 4
	// Token types from llama.h (enum llama_token_type).
	tokenNormal, tokenControl = 1, 3
	// phantom marks a word-initial piece: llama.cpp's WPM tokenizer
	// prepends U+2581 to each word and convert_hf_to_gguf.py rewrites
	// BERT vocabularies that way ("play" -> "▁play", "##ing" -> "ing").
	phantom = "\u2581"
)

// Vocab builds the WordPiece vocabulary for corpus in llama.cpp's phantom
// space form: the special tokens, every lowercase letter, digit and ASCII
// punctuation mark as a word start and as a continuation (so any ASCII text
// tokenizes without [UNK]), then each distinct corpus word, sorted.
func Vocab(corpus []string) []string {
	vocab := slices.Clone(specials)
	seen := map[string]bool{}
	add := func(tok string) {
		if !seen[tok] {
			seen[tok] = true
			vocab = append(vocab, tok)
		}
	}
	for c := rune('!'); c <= '~'; c++ {
		if unicode.IsUpper(c) {
			continue
		}
		add(phantom + string(c))
		add(string(c))
	}
	var words []string
	for _, text := range corpus {
		words = append(words, Words(text)...)
	}
	slices.Sort(words)
	for _, w := range slices.Compact(words) {
		add(phantom + w)
	}
	return vocab
}

// Words splits text the way llama.cpp's WPM pre-tokenizer does for ASCII:
// lowercase, split on white space, every punctuation mark or ASCII symbol
// a word of its own.
func Words(text string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsSpace(r):
			flush()
		case r == 0 || r == unicode.ReplacementChar || unicode.IsControl(r):
		case unicode.IsPunct(r) || (r < 0x7f && unicode.IsSymbol(r)):
			flush()
			words = append(words, string(r))
		default:
			cur.WriteRune(unicode.ToLower(r))
		}
	}
	flush()
	return words
}

// Model builds the GGUF file of a BERT encoder with mean pooling whose
// vocabulary comes from corpus. Its metadata keys and tensor names are the
// ones llama.cpp's loader requires for the "bert" architecture
// (src/llama-arch.cpp, src/models/bert.cpp, src/llama-vocab.cpp).
//
// The weights are deterministic pseudo-random numbers scaled so the model
// behaves as a bag of words: token embeddings dominate and each block adds
// only a small perturbation, so texts sharing words get close vectors.
// That gives tests a meaningful nearest neighbour without a trained model.
func (b BERT) Model(corpus []string) (*File, error) {
	b = b.withDefaults()
	if b.Embd%b.Heads != 0 {
		return nil, fmt.Errorf("semantictest: embedding length %d is not a multiple of %d heads", b.Embd, b.Heads)
	}
	if b.Q8 && (b.Embd%q8Block != 0 || b.FF%q8Block != 0) {
		return nil, fmt.Errorf("semantictest: Q8_0 needs embedding (%d) and feed-forward (%d) lengths that are multiples of %d", b.Embd, b.FF, q8Block)
	}
	fileType := uint32(0)
	if b.Q8 {
		fileType = 7
	}
	vocab := Vocab(corpus)
	types := make([]int32, len(vocab))
	for i := range types {
		types[i] = tokenNormal
		if i < len(specials) {
			types[i] = tokenControl
		}
	}
	f := &File{KV: []KV{
		{"general.architecture", "bert"},
		{"general.name", "kiln-semantictest-bert"},
		{"general.file_type", fileType}, // LLAMA_FTYPE_ALL_F32 or MOSTLY_Q8_0
		{"bert.context_length", uint32(b.Context)},
		{"bert.embedding_length", uint32(b.Embd)},
		{"bert.feed_forward_length", uint32(b.FF)},
		{"bert.block_count", uint32(b.Layers)},
		{"bert.attention.head_count", uint32(b.Heads)},
		{"bert.attention.layer_norm_epsilon", float32(1e-12)},
		{"bert.attention.causal", false},
		{"bert.pooling_type", uint32(1)}, // LLAMA_POOLING_TYPE_MEAN
		{"tokenizer.ggml.model", "bert"},
		{"tokenizer.ggml.tokens", vocab},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.token_type_count", uint32(2)},
		{"tokenizer.ggml.bos_token_id", uint32(clsID)},
		{"tokenizer.ggml.seperator_token_id", uint32(sepID)}, // sic, llama.cpp's spelling
		{"tokenizer.ggml.unknown_token_id", uint32(unkID)},
		{"tokenizer.ggml.padding_token_id", uint32(padID)},
		{"tokenizer.ggml.mask_token_id", uint32(maskID)},
	}}

	rng := splitmix(b.Seed)
	e, ff, nv := int64(b.Embd), int64(b.FF), int64(len(vocab))
	random := func(name string, scale float32, shape ...int64) {
		f.Tensors = append(f.Tensors, Tensor{Name: name, Shape: shape, Data: rng.fill(count(shape), scale)})
	}
	matrix := func(name string, scale float32, shape ...int64) {
		random(name, scale, shape...)
		if b.Q8 {
			f.Tensors[len(f.Tensors)-1].Type = Q8_0
		}
	}
	constant := func(name string, v float32, shape ...int64) {
		data := make([]float32, count(shape))
		for i := range data {
			data[i] = v
		}
		f.Tensors = append(f.Tensors, Tensor{Name: name, Shape: shape, Data: data})
	}
	matrix("token_embd.weight", 1, e, nv)
	random("token_types.weight", 0.01, e, 2)
	random("position_embd.weight", 0.01, e, int64(b.Context))
	constant("token_embd_norm.weight", 1, e)
	constant("token_embd_norm.bias", 0, e)
	for i := range b.Layers {
		blk := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
		for _, qkv := range []string{"attn_q", "attn_k", "attn_v"} {
			matrix(blk(qkv+".weight"), 0.1, e, e)
			constant(blk(qkv+".bias"), 0, e)
		}
		matrix(blk("attn_output.weight"), 0.05, e, e)
		constant(blk("attn_output.bias"), 0, e)
		constant(blk("attn_output_norm.weight"), 1, e)
		constant(blk("attn_output_norm.bias"), 0, e)
		matrix(blk("ffn_up.weight"), 0.1, e, ff)
		constant(blk("ffn_up.bias"), 0, ff)
		matrix(blk("ffn_down.weight"), 0.05, ff, e)
		constant(blk("ffn_down.bias"), 0, e)
		constant(blk("layer_output_norm.weight"), 1, e)
		constant(blk("layer_output_norm.bias"), 0, e)
	}
	return f, nil
}

// WriteModel writes the model for corpus to path and returns the file's
// sha256 in lowercase hex, the form Kiln's configuration records.
func (b BERT) WriteModel(path string, corpus []string) (string, error) {
	f, err := b.Model(corpus)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("semantictest: write model: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

func (b BERT) withDefaults() BERT {
	if b.Embd == 0 {
		b.Embd = Tiny.Embd
	}
	if b.Layers == 0 {
		b.Layers = Tiny.Layers
	}
	if b.Heads == 0 {
		b.Heads = Tiny.Heads
	}
	if b.FF == 0 {
		b.FF = Tiny.FF
	}
	if b.Context == 0 {
		b.Context = Tiny.Context
	}
	return b
}

func count(shape []int64) int {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return int(n)
}

// splitmix is SplitMix64: a fixed algorithm, so the same seed writes the
// same bytes with every Go version (math/rand makes no such promise).
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// fill returns n values uniform in [-scale, scale) with unit-variance
// scaling (uniform on [-√3, √3) has variance 1).
func (s *splitmix) fill(n int, scale float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		u := float64(s.next()>>11) / (1 << 53)
		out[i] = float32((2*u - 1) * math.Sqrt(3) * float64(scale))
	}
	return out
}
