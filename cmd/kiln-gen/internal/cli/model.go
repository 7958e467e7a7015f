package cli

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
)

// modelFlags are the embedding-model flags emit and eval share.
type modelFlags struct {
	path, sha256, config string
	threads              int
	// vectors is gateway.vectors of --config, for emit's static tier.
	vectors config.Vectors
}

func (m *modelFlags) register(fs *flag.FlagSet, purpose string) {
	fs.StringVar(&m.path, "model", "", "GGUF embedding model (e.g. all-MiniLM-L6-v2 Q8_0): "+purpose+"; needs kiln-gen built with -tags semantic")
	fs.StringVar(&m.sha256, "model-sha256", "", "expected sha256 of --model (default: gateway.semantic.sha256 of --config, else the file's own, printed)")
	fs.StringVar(&m.config, "config", "", "take the model from gateway.semantic of this config when --model is not given")
	fs.IntVar(&m.threads, "threads", 0, "threads per embedding (default: gateway.semantic.threads of --config, else 1)")
}

// model is an open embedding model and what emit records about it.
type model struct {
	embedder     semantic.Embedder
	name, sha256 string
}

// open resolves the flags against the config and opens the model, or
// returns nil when none is asked for. The caller closes the embedder.
func (m *modelFlags) open(cmd string, stdout, stderr io.Writer) (*model, int) {
	source := "--model"
	tuned := m.sha256 != "" || m.threads != 0
	if m.config != "" {
		cfg, ok := loadConfig(m.config, stderr)
		if !ok {
			return nil, exitUsage
		}
		m.vectors = cfg.Gateway.Vectors
		sc := cfg.Gateway.Semantic
		if m.path == "" && sc.Model != "" {
			m.path, source = sc.Model, "gateway.semantic.model in "+m.config
			if m.sha256 == "" {
				m.sha256 = sc.SHA256
			}
		}
		if m.threads == 0 {
			m.threads = sc.Threads
		}
	}
	switch {
	case m.path == "" && m.config != "" && m.vectors.File == "":
		// Asked for vectors (make emit SEMANTIC=1 passes --config): emitting
		// none would quietly ship a lexical-only build.
		fmt.Fprintf(stderr, "kiln-gen %s: %s sets neither gateway.semantic.model nor gateway.vectors.file; set one, or drop --config for a build without vectors\n", cmd, m.config)
		return nil, exitUsage
	case m.path == "" && tuned:
		fmt.Fprintf(stderr, "kiln-gen %s: --model-sha256 and --threads need --model (or --config with gateway.semantic.model)\n", cmd)
		return nil, exitUsage
	case m.path == "":
		return nil, exitOK
	}
	if !semantic.Available {
		fmt.Fprintf(stderr, "kiln-gen %s: %s asks for semantic vectors, but this kiln-gen was built without the semantic tag: "+
			"run make llama, then make generate SEMANTIC=1 (or go run -tags semantic ./cmd/kiln-gen with LD_LIBRARY_PATH=.cache/llama/lib)\n", cmd, source)
		return nil, exitUsage
	}
	if m.sha256 == "" {
		sum, err := semantic.FileSHA256(m.path)
		if err != nil {
			fmt.Fprintf(stderr, "kiln-gen %s: %s: %v\n", cmd, source, err)
			return nil, exitUsage
		}
		m.sha256 = sum
		fmt.Fprintf(stdout, "model %s has sha256 %s: set gateway.semantic.sha256 to it in the config kiln serves with\n", m.path, sum)
	}
	e, err := semantic.Open(m.path, m.sha256, m.threads)
	if err != nil {
		fmt.Fprintf(stderr, "kiln-gen %s: %s: %v\n", cmd, source, err)
		return nil, exitFail
	}
	return &model{embedder: e, name: filepath.Base(m.path), sha256: m.sha256}, exitOK
}
