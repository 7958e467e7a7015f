//go:build semantic

package semantic

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/kelindar/search"
)

// Available reports whether this binary can embed text: true only in
// builds with the semantic tag (make build SEMANTIC=1).
const Available = true

// Open loads the GGUF embedding model at modelPath through llama.cpp after
// checking that the file's sha256 is wantSHA256, so a swapped or corrupt
// file is a clear error instead of vectors from another space. threads is
// the number of CPU threads per embedding; 0 keeps the library default
// (KILN_LLAMA_THREADS, else 1). The setting is process-wide.
//
// The process must have found libllama_go.so at start-up (make llama,
// then LD_LIBRARY_PATH=<KILN_LLAMA_DIR>/lib): kelindar/search loads it in
// its package init and panics without it.
func Open(modelPath, wantSHA256 string, threads int) (Embedder, error) {
	got, err := FileSHA256(modelPath)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	switch {
	case wantSHA256 == "":
		return nil, fmt.Errorf("%w: no sha256 is configured for model %s: set it to %s after checking the file's origin",
			ErrModelMismatch, modelPath, got)
	case !strings.EqualFold(got, wantSHA256):
		return nil, fmt.Errorf("%w: model %s has sha256 %s but the configuration expects %s: restore the configured file or update the sha256 and regenerate",
			ErrModelMismatch, modelPath, got, strings.ToLower(wantSHA256))
	case threads < 0:
		return nil, fmt.Errorf("open model %s: threads must be 0 (default) or more, got %d", modelPath, threads)
	case threads > 0:
		if err := setThreads(threads); err != nil {
			return nil, fmt.Errorf("open model %s: %w", modelPath, err)
		}
	}

	vz, err := search.NewVectorizer(modelPath, 0)
	if err != nil {
		return nil, fmt.Errorf("open model %s: llama.cpp cannot load it as a GGUF embedding model (its log is on stderr): %w", modelPath, err)
	}
	e := &llamaEmbedder{v: vz}
	// One embedding now surfaces models that load but cannot embed
	// (encoder-decoder, no [SEP] token) at start-up, not on the first query.
	if _, err := e.Embed("kiln"); err != nil {
		e.Close()
		return nil, fmt.Errorf("open model %s: %w", modelPath, err)
	}
	return e, nil
}

var (
	setThreadsOnce sync.Once
	setThreadsFn   func(int32) int32
	errNoThreads   = errors.New("libllama_go.so has no kiln_set_threads, so gateway.semantic.threads cannot be applied: it was not built by make llama; rebuild it with make llama")
)

// setThreads calls the shim's kiln_set_threads. kelindar's binding has no
// thread parameter, and ggml's default (4) on two cores made one embedding
// take ~0.85 s instead of milliseconds. kelindar dlopens the library with
// RTLD_GLOBAL, so the symbol is found without its handle.
func setThreads(n int) error {
	setThreadsOnce.Do(func() {
		if sym, err := purego.Dlsym(purego.RTLD_DEFAULT, "kiln_set_threads"); err == nil {
			purego.RegisterFunc(&setThreadsFn, sym)
		}
	})
	if setThreadsFn == nil {
		return errNoThreads
	}
	setThreadsFn(int32(n))
	return nil
}

// llamaEmbedder serializes Close against Embed: kelindar's context pool
// panics on a Put after Close.
type llamaEmbedder struct {
	mu     sync.RWMutex
	v      *search.Vectorizer
	closed bool
}

func (e *llamaEmbedder) Embed(text string) ([]float32, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	vec, err := e.v.EmbedText(text)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	return vec, nil
}

func (e *llamaEmbedder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.v.Close()
}
