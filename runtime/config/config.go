package config

import "time"

// Version is the config format this build reads; Load rejects others.
const Version = 1

// Transport names accepted in a backend's "transport" key.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // streamable HTTP
	TransportSSE   = "sse"  // legacy HTTP+SSE
	// TransportWorkspace is kiln's own file and shell tools over a folder,
	// served in process (runtime/workspace).
	TransportWorkspace = "workspace"
)

// Exposure modes accepted in gateway.expose: what tools/list shows a client.
const (
	ExposeMeta   = "meta"   // the meta-tools only
	ExposeDirect = "direct" // every backend tool under its exposed name
	ExposeHybrid = "hybrid" // the meta-tools plus the pinned backend tools
)

// DriftMode is what kiln serves when a compiled backend's live tools,
// resources or prompts differ from its reviewed manifest (gateway.drift,
// backends.NAME.drift).
type DriftMode string

// Drift modes. The manifest is what a pull request reviewed, so pin is the
// default: a backend updated (or compromised) to rewrite a description
// into instructions for the model reaches no agent until someone reviews
// it and runs make generate.
const (
	// DriftPin serves the reviewed tools, resources and prompts only.
	DriftPin DriftMode = "pin"
	// DriftWarn serves the live ones and logs the drift.
	DriftWarn DriftMode = "warn"
	// DriftFollow serves the live ones without a warning.
	DriftFollow DriftMode = "follow"
)

var driftModes = []string{string(DriftPin), string(DriftWarn), string(DriftFollow)}

// Config is a loaded, expanded and validated kiln.yaml.
type Config struct {
	Version int
	// Path is the file the config came from, or a label such as
	// "embedded kiln.yaml" for the default compiled into the binary.
	Path string
	// Dir is where relative paths (cwd, state_dir) resolve from: the config
	// file's folder, or the working directory for the embedded default.
	Dir string
	// FromFile is false for a config loaded from memory, such as the copy
	// compiled into kiln, which a user cannot edit in place.
	FromFile bool
	Gateway  Gateway
	Backends []Backend // sorted by Name
	// Policies are the rules of who may use which tool, in file order;
	// none allows everything (runtime/policy).
	Policies []Policy
	// Profiles are the gateway's views at /mcp/NAME, in file order.
	Profiles []Profile
}

// Gateway holds settings of kiln itself. Each field's YAML key, default
// and range are declared once, in keyTable (table.go), and listed in the
// README's config reference.
type Gateway struct {
	// Name is the server name kiln announces to clients.
	Name string
	// StateDir holds small state files (usage counts); absolute after Load.
	StateDir string
	// CallTimeout is the default per-call backend timeout.
	CallTimeout time.Duration
	// ConnectTimeout bounds connecting and listing one backend.
	ConnectTimeout time.Duration
	// MaxOutputSize caps call_tool_chain output in UTF-8 bytes, cut on a
	// character boundary.
	MaxOutputSize int
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// Sandbox bounds call_tool_chain's TypeScript runs.
	Sandbox Sandbox
	// Output shapes call_tool_chain results before they reach the model.
	Output Output
	// Health paces the checks that find hung or dead backends.
	Health Health
	// Registration bounds what register_manual may add at run time.
	Registration Registration
	// HTTP guards the --http front door.
	HTTP HTTP
	// Semantic names the embedding model of SEMANTIC=1 builds.
	Semantic Semantic
	// Vectors configures the static word-vector tier.
	Vectors Vectors
	// Audit configures the audit log.
	Audit Audit
	// Console configures the web console and the human API.
	Console Console
	// Expose is ExposeMeta, ExposeDirect or ExposeHybrid.
	Expose string
	// Pin lists the backend tools hybrid mode lists beside the meta-tools,
	// each "backend.tool" or "backend.*".
	Pin []string
	// Drift is gateway.drift as the file (or KILN_GATEWAY_DRIFT) sets
	// it, "" when neither does; read it through Config.DriftMode, which
	// applies the default and the backends' overrides.
	Drift DriftMode
	// MetricsAddr, when set, serves /metrics, /healthz and /readyz on a
	// listener of their own (host:port), for stdio-only deployments.
	MetricsAddr string
	// DrainTimeout bounds how long kiln finishes calls in flight after
	// SIGTERM, once it has turned not-ready.
	DrainTimeout time.Duration
	// StateURL, when set (redis://host:port/db, rediss:// or unix://),
	// keeps what replicas behind a load balancer must agree on (runtime
	// registrations, usage counts, OAuth tokens) in Redis instead of
	// StateDir, so any replica serves any request.
	StateURL string
}

// Health configures backend health checks (YAML gateway.health).
type Health struct {
	// Interval between pings of one backend; Timeout bounds
	// each ping.
	Interval, Timeout time.Duration
	// Failures in a row that open the circuit.
	Failures int
}

// Registration bounds runtime registration (YAML gateway.registration).
type Registration struct {
	// AllowCommands lists the executables a stdio backend registered at run
	// time may run, by base name or absolute path; empty refuses every
	// stdio registration, so only HTTP backends can be added.
	AllowCommands []string
	// AllowHosts lists the addresses a backend registered at run time may
	// reach although they are loopback, private, link-local or otherwise
	// internal, which are refused by default. kiln's own listeners stay
	// refused whatever this says.
	AllowHosts []HostRule
	// MaxBackends caps backends registered at run time.
	MaxBackends int
	// Persist keeps registrations across restarts in StateDir.
	Persist bool
}

// HTTP guards kiln serve --http (YAML gateway.http).
type HTTP struct {
	// AuthToken is the bearer token clients must send; required when the
	// listener is not loopback.
	AuthToken string
	// JWTIssuer, JWKSURL and Audience enable JWT bearer validation, the
	// OAuth 2.1 resource-server option.
	JWTIssuer, JWKSURL, Audience string
	// AllowedOrigins and AllowedHosts guard against DNS rebinding; empty
	// means loopback names only.
	AllowedOrigins, AllowedHosts []string
	// MaxBody caps a request body in bytes.
	MaxBody int64
	// MaxSessions caps open sessions per client identity.
	MaxSessions int
	// MaxSessionsTotal caps open sessions across all clients; at least MaxSessions.
	MaxSessionsTotal int
	// SessionIdle is how long a session with no request open stays alive.
	SessionIdle time.Duration
	// MaxConnections caps open TCP connections in total;
	// MaxConnectionsPerClient per client IP.
	MaxConnections, MaxConnectionsPerClient int
	// ReadTimeout bounds reading a request's headers and body; streams stay open once the request is read.
	ReadTimeout time.Duration
}

// Semantic configures the embedding model (YAML gateway.semantic).
type Semantic struct {
	// Model is the GGUF file's path; SHA256 its expected digest, checked
	// against the digest recorded with the frozen vectors.
	Model, SHA256 string
	// Threads the embedder may use.
	Threads int
}

// Console configures the web console and human API (YAML gateway.console).
type Console struct {
	Enabled    bool
	ShowValues bool
	// OIDC is set when people log in through a provider.
	OIDC    *OIDC
	Allowed []string
}

// OIDC is the console's OpenID Connect client.
type OIDC struct {
	Issuer, ClientID, ClientSecret, RedirectURL string
}

// Audit configures the audit log (YAML gateway.audit).
type Audit struct {
	// Path is the absolute JSONL file; "" writes none.
	Path    string
	MaxSize int64
	Keep    int
	Flush   time.Duration
	Values  bool
}

// Vectors configures the static word-vector tier (YAML gateway.vectors).
// File is read by kiln-gen emit only; kiln reads Fusion and Depth when a
// frozen tier is compiled in.
type Vectors struct {
	// File is the word-vector file's absolute path, "" when off.
	File string
	// Top is how many frequent words the cut keeps besides the tools'.
	Top int
	// Fusion is rerank, linear or rrf.
	Fusion string
	// Depth is how many lexical hits rerank reorders.
	Depth int
}

// Sandbox holds the limits of tier-3 runs (YAML gateway.sandbox). Zero
// means the declared default (SandboxDefaults), which the sandbox applies.
type Sandbox struct {
	// Timeout applies when a call names none; MaxTimeout
	// caps what a call may ask for.
	Timeout, MaxTimeout time.Duration
	// MemoryBytes is the heap budget per run; YAML takes
	// a size such as "50MiB" or a byte count.
	MemoryBytes int64
	// MaxCalls caps backend tool calls per run.
	MaxCalls int
	// MaxConcurrent caps simultaneous runs; QueueWait is how
	// long a run waits for a slot before a "busy" error.
	MaxConcurrent int
	QueueWait     time.Duration
}

// Output configures the call_tool_chain output pipeline (YAML
// gateway.output). Every stage is on unless set false.
type Output struct {
	IntentFilter    bool
	AutoChunkJSON   bool
	SmartTruncation bool
	SizeFooter      bool
	// Thresholds in bytes; zero means the pipeline's default.
	IntentThreshold, ChunkThreshold, TruncateAt int
}

// Backend is one declared backend MCP server. Its keys, defaults and
// ranges are declared in keyTable (table.go).
type Backend struct {
	Name      string
	Transport string // TransportStdio, TransportHTTP, TransportSSE or TransportWorkspace
	// stdio
	Command string
	Args    []string
	Env     map[string]string // keys keep their case; values expanded
	Cwd     string            // absolute; defaults to Config.Dir
	// http and sse
	URL     string
	Headers map[string]string // keys keep their case; values expanded
	// workspace
	Workspace *Workspace
	Auth      *Auth // OAuth 2.1; nil sends Headers only
	// Timeout is the per-call timeout (default Gateway.CallTimeout).
	Timeout time.Duration
	// MaxConcurrent caps calls in flight; a call over the cap waits up to QueueWait
	// for a free slot, then fails with a busy error.
	MaxConcurrent int
	QueueWait     time.Duration
	Enabled       bool
	// Bare lists the backend's tools under their own names (mapped to the
	// charset LLM APIs accept) instead of "backend__tool" in the direct and
	// hybrid exposure modes.
	Bare bool
	// Required makes /readyz answer 503 until this backend is connected
	// and its tools, resources and prompts are listed, so a load balancer or Kubernetes sends no traffic to a replica
	// that cannot serve it.
	Required bool
	// Drift is backends.NAME.drift, "" when the file leaves it to
	// gateway.drift; read it through Config.DriftMode.
	Drift DriftMode
	// AcceptFindings lists the poisoning findings (RULE@TOOL) a reviewer
	// accepted for this backend (runtime/poison).
	AcceptFindings []string
	// Vars lists the environment variables this backend's values reference
	// through ${VAR} or ${VAR:-default}, sorted by name, for
	// get_required_keys_for_tool. Values are never stored here.
	Vars []VarRef
}

// VarRef is one environment variable a backend's config refers to.
type VarRef struct {
	Name string
	// Key is the config key path that references it, e.g.
	// "backends.github.env.GITHUB_TOKEN".
	Key string
	// HasDefault is true for ${VAR:-default}: the backend works without it.
	HasDefault bool
	// Set reports whether the variable was set (in the process environment
	// or the .env file) when the config was loaded.
	Set bool
}

// Backend returns the named backend, if declared.
func (c *Config) Backend(name string) (*Backend, bool) {
	for i := range c.Backends {
		if c.Backends[i].Name == name {
			return &c.Backends[i], true
		}
	}
	return nil, false
}

// DriftMode returns the drift mode of the named backend: its own drift
// key, else gateway.drift, else pin. explicit reports whether the file (or
// a KILN_… override) set it, for the backend or gateway-wide, rather than
// leaving it to the default. A backend the config does not name gets the
// gateway's mode; whether a backend has a review to pin to at all is the
// catalog's business (backends not compiled in follow whatever this says).
func (c *Config) DriftMode(backend string) (mode DriftMode, explicit bool) {
	if b, ok := c.Backend(backend); ok && b.Drift != "" {
		return b.Drift, true
	}
	if c.Gateway.Drift != "" {
		return c.Gateway.Drift, true
	}
	return DriftPin, false
}

// EditHint says where to make a change to this config: the file, or, for
// a config without one, how to give kiln one.
func (c *Config) EditHint() string {
	if c.FromFile {
		return c.Path
	}
	return "a kiln.yaml of your own (kiln is running on its compiled-in " + c.Path + "; pass --config or set KILN_CONFIG)"
}
