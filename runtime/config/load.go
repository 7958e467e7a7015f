package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// LoadOptions adjust how a config is loaded. The zero value reads the
// process environment.
type LoadOptions struct {
	// Getenv looks up an environment variable; nil means os.LookupEnv.
	// Tests inject one instead of changing the process environment.
	Getenv func(name string) (value string, ok bool)
	// NoDotEnv skips the .env file beside the config.
	NoDotEnv bool
}

// DefaultGateway returns the gateway settings used where kiln.yaml is
// silent. StateDir is relative; Load resolves it against the config's folder.
// Sandbox limits and Output thresholds stay zero, leaving the defaults to
// the sandbox and the pipeline, which own them.
func DefaultGateway() Gateway {
	return Gateway{
		Name:           "kiln",
		StateDir:       ".kiln",
		CallTimeout:    30 * time.Second,
		ConnectTimeout: 30 * time.Second,
		MaxOutputSize:  200000,
		DrainTimeout:   20 * time.Second,
		LogLevel:       "info",
		Expose:         ExposeMeta,
		Health:         Health{Interval: 30 * time.Second, Timeout: 5 * time.Second, Failures: 3},
		Registration:   Registration{MaxBackends: 10},
		HTTP:           HTTP{MaxBody: 4 << 20, MaxSessions: 32, MaxSessionsTotal: 512, SessionIdle: 5 * time.Minute, MaxConnections: 1024, MaxConnectionsPerClient: 128, ReadTimeout: 30 * time.Second},
		Semantic:       Semantic{Threads: 1},
		Output: Output{
			IntentFilter:    true,
			AutoChunkJSON:   true,
			SmartTruncation: true,
			SizeFooter:      true,
		},
	}
}

// Load reads the config at path and the .env file beside it.
func Load(path string) (*Config, error) {
	return LoadWith(path, LoadOptions{})
}

// LoadWith is Load with options.
func LoadWith(path string, opts LoadOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := LoadBytesWith(data, path, filepath.Dir(path), opts)
	if cfg != nil {
		cfg.FromFile = true
	}
	return cfg, err
}

// LoadBytes loads a config held in memory, such as the default compiled
// into the binary. label names it in errors ("embedded kiln.yaml"); dir is
// where relative paths resolve and where a .env file is read from, usually
// the working directory.
func LoadBytes(data []byte, label, dir string) (*Config, error) {
	return LoadBytesWith(data, label, dir, LoadOptions{})
}

// LoadBytesWith is LoadBytes with options.
func LoadBytesWith(data []byte, label, dir string, opts LoadOptions) (*Config, error) {
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	env := lookup{getenv: opts.Getenv, builtin: map[string]string{}}
	if env.getenv == nil {
		env.getenv = os.LookupEnv
	}
	dotenv := &problems{}
	if !opts.NoDotEnv {
		if env.dotenv, dotenv, err = readDotEnv(filepath.Join(dir, ".env")); err != nil {
			return nil, err
		}
	}

	ps := &problems{file: label}
	d := parse(data, ps)
	if d == nil {
		return nil, joinProblems(dotenv, ps)
	}
	b := &builder{checker: checker{p: ps, env: env}, l: layer(d, env), lists: d.lists, dir: dir}
	cfg := &Config{Version: Version, Path: label, Dir: dir, Gateway: b.gateway()}
	for _, rb := range d.backends {
		cfg.Backends = append(cfg.Backends, b.backend(rb, cfg.Gateway))
	}
	if err := joinProblems(dotenv, ps); err != nil {
		return nil, err
	}
	slices.SortFunc(cfg.Backends, func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
	return cfg, nil
}
