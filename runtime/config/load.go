package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// silent, read from keyTable. StateDir is relative; Load resolves it
// against the config's folder. Sandbox limits and Output thresholds stay
// zero: the sandbox and the pipeline read zero as "the default", which they
// take from keyTable (SandboxDefaults) and pipeline's constants.
func DefaultGateway() Gateway {
	return Gateway{
		Name:           keyIndex["gateway.name"].def,
		StateDir:       keyIndex["gateway.state_dir"].def,
		CallTimeout:    defDuration("gateway.call_timeout"),
		ConnectTimeout: defDuration("gateway.connect_timeout"),
		MaxOutputSize:  defInt("gateway.max_output_size"),
		DrainTimeout:   defDuration("gateway.drain_timeout"),
		LogLevel:       keyIndex["gateway.log_level"].def,
		Expose:         keyIndex["gateway.expose"].def,
		Health: Health{Interval: defDuration("gateway.health.interval"), Timeout: defDuration("gateway.health.timeout"),
			Failures: defInt("gateway.health.failures")},
		Registration: Registration{MaxBackends: defInt("gateway.registration.max_backends"), Persist: defFlag("gateway.registration.persist")},
		HTTP: HTTP{MaxBody: defSize("gateway.http.max_body"), MaxSessions: defInt("gateway.http.max_sessions"),
			MaxSessionsTotal: defInt("gateway.http.max_sessions_total"), SessionIdle: defDuration("gateway.http.session_idle"),
			MaxConnections: defInt("gateway.http.max_connections"), MaxConnectionsPerClient: defInt("gateway.http.max_connections_per_client"),
			ReadTimeout: defDuration("gateway.http.read_timeout")},
		Semantic: Semantic{Threads: defInt("gateway.semantic.threads")},
		Vectors: Vectors{Top: defInt("gateway.vectors.top"), Fusion: keyIndex["gateway.vectors.fusion"].def,
			Depth: defInt("gateway.vectors.depth")},
		Audit: Audit{MaxSize: defSize("gateway.audit.max_size"), Keep: defInt("gateway.audit.keep"),
			Flush: defDuration("gateway.audit.flush"), Values: defFlag("gateway.audit.values")},
		Output: Output{
			IntentFilter:    defFlag("gateway.output.intent_filter"),
			AutoChunkJSON:   defFlag("gateway.output.auto_chunk_json"),
			SmartTruncation: defFlag("gateway.output.smart_truncation"),
			SizeFooter:      defFlag("gateway.output.size_footer"),
		},
	}
}

// SandboxDefaults returns the sandbox limits kiln.yaml declares as
// defaults; the sandbox fills a zero limit from them, and the guide quotes
// them.
func SandboxDefaults() Sandbox {
	return Sandbox{
		Timeout:       defDuration("gateway.sandbox.timeout"),
		MaxTimeout:    defDuration("gateway.sandbox.max_timeout"),
		MemoryBytes:   defSize("gateway.sandbox.memory"),
		MaxCalls:      defInt("gateway.sandbox.max_calls"),
		MaxConcurrent: defInt("gateway.sandbox.max_concurrent"),
		QueueWait:     defDuration("gateway.sandbox.queue_wait"),
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
	cfg := &Config{Version: Version, Path: label, Dir: dir, Gateway: b.gateway(), Policies: d.policies}
	cfg.Profiles = b.finishProfiles(d.profiles, cfg.Gateway)
	for _, rb := range d.backends {
		cfg.Backends = append(cfg.Backends, b.backend(rb, cfg.Gateway))
	}
	if err := joinProblems(dotenv, ps); err != nil {
		return nil, err
	}
	slices.SortFunc(cfg.Backends, func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
	return cfg, nil
}
