package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		vars map[string]string
		want []string
	}{
		{"empty file", "", nil, []string{"kiln.yaml: empty config; start it with version: 1"}},
		{"comments only", "# nothing\n", nil, []string{"kiln.yaml: empty config; start it with version: 1"}},
		{"bad yaml", "version: 1\nbackends: [\n", nil, []string{
			"kiln.yaml:2: invalid YAML: did not find expected node content"}},
		{"top is a list", "- version: 1\n", nil, []string{
			"kiln.yaml:1: the top level is a list; want a mapping with version, gateway and backends"}},
		{"two documents", "version: 1\n---\nversion: 1\n", nil, []string{
			"kiln.yaml:2: more than one YAML document (---); keep a single document"}},
		{"missing version", "backends: {}\n", nil, []string{
			"kiln.yaml:1: version: missing; add version: 1 as the first line"}},
		{
			// The version is read first: a newer file's other keys are not judged.
			"unsupported version", "version: 2\nbackends:\n  x: {wat: 1}\n", nil, []string{
				`kiln.yaml:1: version: unsupported version "2"; this kiln reads version: 1`},
		},
		{"string version", "version: \"1\"\n", nil, []string{
			`kiln.yaml:1: version: unsupported version "1"; this kiln reads version: 1`}},
		{"unknown top key with alias hint", "version: 1\nmcpServers: {}\n", nil, []string{
			`kiln.yaml:2: mcpServers: unknown key; did you mean "backends"?`}},
		{"typo with suggestion", `
version: 1
backends:
  everything:
    comand: node
`, nil, []string{`kiln.yaml:5: backends.everything.comand: unknown key; did you mean "command"?`}},
		{"unknown key without a close match", `
version: 1
gateway:
  colour: blue
`, nil, []string{"kiln.yaml:4: gateway.colour: unknown key; the keys here are name, state_dir, call_timeout, connect_timeout, max_output_size, log_level, sandbox, output, health, registration, http, semantic, vectors, console, audit, expose, pin, drift, metrics_addr, drain_timeout or state_url"}},
		{"metrics_addr without a port", "version: 1\ngateway:\n  metrics_addr: localhost\n", nil, []string{
			`kiln.yaml:3: gateway.metrics_addr: want host:port such as 127.0.0.1:9464, got "localhost" (address localhost: missing port in address)`}},
		{"state_url with another scheme", "version: 1\ngateway:\n  state_url: http://127.0.0.1:6379\n", nil, []string{
			`kiln.yaml:3: gateway.state_url: "http://127.0.0.1:6379" is not a Redis URL (the scheme must be redis, rediss (TLS) or unix); write e.g. redis://127.0.0.1:6379/0, or remove the key to keep state in gateway.state_dir`}},
		{"state_url with a bad database and a password", "version: 1\ngateway:\n  state_url: redis://:hunter2@redis:6379/main\n", nil, []string{
			`kiln.yaml:3: gateway.state_url: "redis://:xxxxx@redis:6379/main" is not a Redis URL (the path must be a database number such as /0); write e.g. redis://127.0.0.1:6379/0, or remove the key to keep state in gateway.state_dir`}},
		{"state_url without a host", "version: 1\ngateway:\n  state_url: redis:///0\n", nil, []string{
			`kiln.yaml:3: gateway.state_url: "redis:///0" is not a Redis URL (it names no host); write e.g. redis://127.0.0.1:6379/0, or remove the key to keep state in gateway.state_dir`}},
		{"drain_timeout out of range", "version: 1\ngateway:\n  drain_timeout: 10ms\n", nil, []string{
			`kiln.yaml:3: gateway.drain_timeout: "10ms" is too short; use 1s to 1h`}},
		{"required not a flag", "version: 1\nbackends:\n  a:\n    command: x\n    required: maybe\n", nil, []string{
			`kiln.yaml:5: backends.a.required: want true or false, got "maybe"`}},
		{"ping timeout not shorter than interval", "version: 1\ngateway:\n  health:\n    interval: 5s\n    timeout: 5s\n", nil, []string{
			`kiln.yaml:5: gateway.health.timeout: "5s" is not shorter than gateway.health.interval (5s); a ping must end before the next starts`}},
		{"relative allowed command", "version: 1\ngateway:\n  registration:\n    allow_commands: [bin/server]\n", nil, []string{
			`kiln.yaml:4: gateway.registration.allow_commands[0]: "bin/server" is a relative path; give a bare program name (npx) or an absolute path`}},
		{"allowed commands not a list", "version: 1\ngateway:\n  registration:\n    allow_commands: npx\n", nil, []string{
			`kiln.yaml:4: gateway.registration.allow_commands: is a single value; want a list such as ["npx"]`}},
		{"allowed hosts not hosts", "version: 1\ngateway:\n  registration:\n    allow_hosts: [\"http://a.test/mcp\", 10.0.0.0/33, \"a.test:0\", \"\"]\n", nil, []string{
			`kiln.yaml:4: gateway.registration.allow_hosts[0]: "http://a.test/mcp" is not a host; write a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8`,
			`kiln.yaml:4: gateway.registration.allow_hosts[1]: "10.0.0.0/33" is not a valid CIDR prefix (a port cannot go with one); write a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8`,
			`kiln.yaml:4: gateway.registration.allow_hosts[2]: "a.test:0" has no valid port (1 to 65535); write a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8`,
			`kiln.yaml:4: gateway.registration.allow_hosts[3]: empty; give a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8`}},
		{"jwt issuer without jwks", "version: 1\ngateway:\n  http:\n    jwt_issuer: https://a.test\n", nil, []string{
			`kiln.yaml: gateway.http: jwt_issuer and jwks_url go together; set both to validate JWTs, or neither`}},
		{"session total below per-client", "version: 1\ngateway:\n  http:\n    max_sessions: 10\n    max_sessions_total: 5\n", nil, []string{
			`kiln.yaml:5: gateway.http.max_sessions_total: "5" is below gateway.http.max_sessions (10); the total must hold at least one client's sessions`}},
		{"per-client connections above total", "version: 1\ngateway:\n  http:\n    max_connections: 10\n    max_connections_per_client: 20\n", nil, []string{
			`kiln.yaml:5: gateway.http.max_connections_per_client: "20" is above gateway.http.max_connections (10); one client cannot have more than all of them`}},
		{"session idle without unit", "version: 1\ngateway:\n  http:\n    session_idle: 300\n", nil, []string{
			`kiln.yaml:4: gateway.http.session_idle: "300" has no unit; write 300s (or ms, m, h)`}},
		{"bad model digest", "version: 1\ngateway:\n  semantic:\n    sha256: abc\n", nil, []string{
			`kiln.yaml:4: gateway.semantic.sha256: "abc" is not a sha256 digest (64 hex digits); run sha256sum on the model file`}},
		{"unknown exposure mode", "version: 1\ngateway:\n  expose: drect\n", nil, []string{
			`kiln.yaml:3: gateway.expose: unknown exposure mode "drect"; use meta, direct or hybrid (did you mean direct?)`}},
		{"pin outside hybrid", "version: 1\ngateway:\n  expose: direct\n  pin: [a.b]\n", nil, []string{
			`kiln.yaml:4: gateway.pin: only read when gateway.expose is hybrid (it is direct); set expose: hybrid or remove pin`}},
		{"malformed pins", "version: 1\ngateway:\n  expose: hybrid\n  pin: [everything, Bad.x, a.b, a.b, \"c.\"]\n", nil, []string{
			`kiln.yaml:4: gateway.pin[0]: "everything" names no tool; write backend.tool (e.g. everything.echo) or backend.* for all of its tools`,
			`kiln.yaml:4: gateway.pin[1]: "Bad.x": backend "Bad" is not a backend name (^[a-z][a-z0-9_-]*$); write backend.tool`,
			`kiln.yaml:4: gateway.pin[3]: "a.b" is pinned twice; remove one`,
			`kiln.yaml:4: gateway.pin[4]: "c." names no tool; write backend.tool (e.g. everything.echo) or backend.* for all of its tools`}},
		{"bare not a flag", "version: 1\nbackends:\n  a:\n    command: x\n    bare: yes please\n", nil, []string{
			`kiln.yaml:5: backends.a.bare: want true or false, got "yes please"`}},
		{"zero max_concurrent", "version: 1\nbackends:\n  a:\n    command: x\n    max_concurrent: 0\n", nil, []string{
			`kiln.yaml:5: backends.a.max_concurrent: want a positive whole number such as 10, got "0"`}},
		{"unknown transport", `
version: 1
backends:
  github:
    transport: grpc
    command: x
`, nil, []string{`kiln.yaml:5: backends.github.transport: unknown transport "grpc"; use stdio, http, sse or workspace`}},
		{"transport alias", `
version: 1
backends:
  r:
    transport: streamable-http
    url: http://a.test/mcp
`, nil, []string{`kiln.yaml:5: backends.r.transport: unknown transport "streamable-http"; use stdio, http, sse or workspace (did you mean http?)`}},
		{"missing command", `
version: 1
backends:
  a:
    transport: stdio
    args: [x]
`, nil, []string{"kiln.yaml:4: backends.a.command: missing; stdio backends need the program to run, e.g. command: npx"}},
		{"command from unset variable", `
version: 1
backends:
  a:
    command: ${SERVER_BIN}
`, nil, []string{"kiln.yaml:5: backends.a.command: empty; give the program to run, e.g. command: npx (unset: ${SERVER_BIN})"}},
		{"missing url", `
version: 1
backends:
  r:
    transport: sse
`, nil, []string{"kiln.yaml:4: backends.r.url: missing; sse backends need the server's address, e.g. url: http://127.0.0.1:3101/sse"}},
		{"relative url", `
version: 1
backends:
  r:
    transport: http
    url: 127.0.0.1:3101/mcp
  s:
    transport: http
    url: ftp://a.test/
`, nil, []string{
			`kiln.yaml:6: backends.r.url: "127.0.0.1:3101/mcp" is not an absolute http:// or https:// URL; write e.g. http://127.0.0.1:3101/mcp`,
			`kiln.yaml:9: backends.s.url: "ftp://a.test/" is not an absolute http:// or https:// URL; write e.g. http://127.0.0.1:3101/mcp`,
		}},
		{"url without transport", `
version: 1
backends:
  r:
    url: http://a.test/mcp
`, nil, []string{"kiln.yaml:4: backends.r.transport: missing; add transport: http (streamable HTTP) or transport: sse (legacy HTTP+SSE)"}},
		{"no transport at all", `
version: 1
backends:
  r:
    timeout: 5s
`, nil, []string{"kiln.yaml:4: backends.r: no transport; add transport: stdio with a command, or transport: http with a url"}},
		{"keys of the wrong transport", `
version: 1
backends:
  r:
    transport: http
    url: http://a.test/mcp
    env: {A: b}
    cwd: x
  s:
    command: x
    headers: {A: b}
`, nil, []string{
			"kiln.yaml:7: backends.r.env: not used by the http transport; remove it or set transport: stdio",
			"kiln.yaml:8: backends.r.cwd: not used by the http transport; remove it or set transport: stdio",
			"kiln.yaml:11: backends.s.headers: not used by stdio backends; remove it or set transport: http (or sse)",
		}},
		{"duplicate backends", `
version: 1
backends:
  github:
    command: a
  github:
    command: b
`, nil, []string{"kiln.yaml:6: backends.github: declared twice (first at line 4); remove or rename one"}},
		{"duplicate keys", `
version: 1
gateway:
  name: a
  name: b
backends:
  a:
    command: x
    env: {A: 1, A: 2}
`, nil, []string{
			"kiln.yaml:5: gateway.name: set twice (first at line 4); remove or rename one",
			"kiln.yaml:9: backends.a.env.A: set twice (first at line 9); remove or rename one",
		}},
		{"invalid names", `
version: 1
backends:
  GitHub API:
    command: x
  2fa:
    command: x
  search_tools:
    command: x
  kiln:
    command: x
`, nil, []string{
			`kiln.yaml:4: backends["GitHub API"]: invalid backend name; names start with a lowercase letter followed by lowercase letters, digits, - or _ (try "github-api")`,
			`kiln.yaml:6: backends.2fa: invalid backend name; names start with a lowercase letter followed by lowercase letters, digits, - or _ (try "b2fa")`,
			`kiln.yaml:8: backends.search_tools: reserved name (kiln and its meta-tools use it); rename the backend, e.g. "search_tools-server"`,
			`kiln.yaml:10: backends.kiln: reserved name (kiln and its meta-tools use it); rename the backend, e.g. "kiln-server"`,
		}},
		{"override prefix clash", `
version: 1
backends:
  my-srv: {command: x}
  my_srv: {command: y}
`, nil, []string{"kiln.yaml:5: backends.my_srv: shares the override prefix KILN_BACKENDS_MY_SRV_ with backends.my-srv; rename one"}},
		{"durations and numbers", `
version: 1
gateway:
  call_timeout: 30
  connect_timeout: soon
  max_output_size: lots
  log_level: warning
backends:
  a:
    command: x
    timeout: -5s
    enabled: yes
  b:
    command: x
    timeout: 0s
`, nil, []string{
			`kiln.yaml:4: gateway.call_timeout: "30" has no unit; write 30s (or ms, m, h)`,
			`kiln.yaml:5: gateway.connect_timeout: invalid duration "soon"; use Go syntax such as 30s, 1m30s or 500ms`,
			`kiln.yaml:6: gateway.max_output_size: want a positive whole number such as 200000, got "lots"`,
			`kiln.yaml:7: gateway.log_level: unknown log level "warning"; use debug, info, warn or error (did you mean warn?)`,
			`kiln.yaml:11: backends.a.timeout: must be positive, got "-5s"; use e.g. 30s`,
			`kiln.yaml:12: backends.a.enabled: want true or false, got "yes"`,
			`kiln.yaml:15: backends.b.timeout: must be positive, got "0s"; use e.g. 30s`,
		}},
		{"override problems name the variable", "version: 1\nbackends:\n  a: {command: x}\n",
			map[string]string{"KILN_BACKENDS_A_TIMEOUT": "fast", "KILN_GATEWAY_LOG_LEVEL": "loud"}, []string{
				`kiln.yaml: gateway.log_level (from KILN_GATEWAY_LOG_LEVEL): unknown log level "loud"; use debug, info, warn or error`,
				`kiln.yaml: backends.a.timeout (from KILN_BACKENDS_A_TIMEOUT): invalid duration "fast"; use Go syntax such as 30s, 1m30s or 500ms`,
			}},
		{"shapes", `
version: 1
gateway: [a]
backends:
  a:
    command: [x]
    args: x
    env: [A]
  b:
  c: {command: x, env: {A: }}
  d: {command: x, args: [a, ~], timeout: }
`, nil, []string{
			"kiln.yaml:3: gateway: is a list; want a mapping of settings",
			"kiln.yaml:6: backends.a.command: is a list; want a single value",
			`kiln.yaml:7: backends.a.args: is a single value; want a list such as ["--port", "3000"]`,
			"kiln.yaml:8: backends.a.env: is a list; want a mapping of names to values",
			"kiln.yaml:9: backends.b: is empty; want settings such as transport: stdio and command: npx",
			`kiln.yaml:10: backends.c.env.A: empty value; write "" for an empty string or ${A} to pass the variable through`,
			`kiln.yaml:11: backends.d.args[1]: empty value; give a value (quote an empty string as "") or remove the key`,
			`kiln.yaml:11: backends.d.timeout: empty value; give a value (quote an empty string as "") or remove the key`,
		}},
		{"bad env and header names", `
version: 1
backends:
  a: {command: x, env: {"A=B": x}}
  b: {transport: http, url: "http://a.test", headers: {"Bad Header": x}}
`, nil, []string{
			`kiln.yaml:4: backends.a.env["A=B"]: invalid variable name; names cannot be empty or contain = or NUL`,
			`kiln.yaml:5: backends.b.headers["Bad Header"]: invalid header name; use letters, digits and - (e.g. Authorization, X-Api-Key)`,
		}},
		{"header value with a line break", `
version: 1
backends:
  b:
    transport: http
    url: http://a.test
    headers: {X-Token: "${TOKEN}"}
`, map[string]string{"TOKEN": "a\r\nInjected: yes"}, []string{
			"kiln.yaml:7: backends.b.headers.X-Token: contains a line break; header values are one line"}},
		{"expansion errors", `
version: 1
backends:
  a:
    command: x
    args: ["${OPEN", "${A-b}", "${}", "${1X}"]
`, nil, []string{
			"kiln.yaml:6: backends.a.args[0]: unterminated ${; close it with } or write $$ for a literal $",
			"kiln.yaml:6: backends.a.args[1]: unsupported ${A-…}; use ${A} or ${A:-default} (write $$ for a literal $)",
			"kiln.yaml:6: backends.a.args[2]: ${…} without a variable name; names are letters, digits and _ and do not start with a digit (write $$ for a literal $)",
			"kiln.yaml:6: backends.a.args[3]: ${…} without a variable name; names are letters, digits and _ and do not start with a digit (write $$ for a literal $)",
		}},
		{"merge keys", `
version: 1
backends:
  a: &base {command: x}
  b:
    <<: *base
    args: [y]
`, nil, []string{"kiln.yaml:6: backends.b.<<: merge keys are not supported; write the keys out"}},
		{"every problem in one error", `
version: 1
gateway:
  nmae: k
backends:
  a:
    transport: grpc
  B:
    command: x
`, nil, []string{
			`kiln.yaml:4: gateway.nmae: unknown key; did you mean "name"?`,
			`kiln.yaml:7: backends.a.transport: unknown transport "grpc"; use stdio, http, sse or workspace`,
			`kiln.yaml:8: backends.B: invalid backend name; names start with a lowercase letter followed by lowercase letters, digits, - or _ (try "b")`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, tt.yaml, tt.vars, tt.want)
		})
	}
}

// TestOneLoadReportsEverything puts one of each kind of mistake in a
// config: a repair list must not need several runs to read. A backend with
// a typo, a bad shape or a bad name still has its other settings checked,
// and the typo is not reported a second time as a missing key.
func TestOneLoadReportsEverything(t *testing.T) {
	expectProblems(t, `
version: 1
gateway:
  colour: blue
  call_timeout: soon
  log_level: loud
  health:
    interval: 1ms
backends:
  Bad Name:
    comand: x
  r:
    transport: http
    timeout: fast
    urll: http://a.test/mcp
  s:
    transport: http
    queue_wait: 5
  e:
    command: [x]
    env: {A: }
    timeout: nope
  f:
    comand: x
    max_concurrent: 0
`, nil, []string{
		"kiln.yaml:4: gateway.colour: unknown key; the keys here are name, state_dir, call_timeout, connect_timeout, max_output_size, log_level, sandbox, output, health, registration, http, semantic, vectors, console, audit, expose, pin, drift, metrics_addr, drain_timeout or state_url",
		`kiln.yaml:5: gateway.call_timeout: invalid duration "soon"; use Go syntax such as 30s, 1m30s or 500ms`,
		`kiln.yaml:6: gateway.log_level: unknown log level "loud"; use debug, info, warn or error`,
		`kiln.yaml:8: gateway.health.interval: "1ms" is too short; use 1s to 24h`,
		`kiln.yaml:10: backends["Bad Name"]: invalid backend name; names start with a lowercase letter followed by lowercase letters, digits, - or _ (try "bad-name")`,
		`kiln.yaml:11: backends["Bad Name"].comand: unknown key; did you mean "command"?`,
		`kiln.yaml:14: backends.r.timeout: invalid duration "fast"; use Go syntax such as 30s, 1m30s or 500ms`,
		`kiln.yaml:15: backends.r.urll: unknown key; did you mean "url"?`,
		"kiln.yaml:16: backends.s.url: missing; http backends need the server's address, e.g. url: http://127.0.0.1:3101/mcp",
		`kiln.yaml:18: backends.s.queue_wait: "5" has no unit; write 5s (or ms, m, h)`,
		"kiln.yaml:20: backends.e.command: is a list; want a single value",
		`kiln.yaml:21: backends.e.env.A: empty value; write "" for an empty string or ${A} to pass the variable through`,
		`kiln.yaml:22: backends.e.timeout: invalid duration "nope"; use Go syntax such as 30s, 1m30s or 500ms`,
		`kiln.yaml:24: backends.f.comand: unknown key; did you mean "command"?`,
		`kiln.yaml:25: backends.f.max_concurrent: want a positive whole number such as 10, got "0"`,
	})
}

// TestDotEnvAndConfigProblemsTogether: a broken .env line does not hide
// the config's own problems, and its good lines still feed the config.
func TestDotEnvAndConfigProblemsTogether(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("GOOD=5s\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadBytesWith([]byte("version: 1\ngateway:\n  call_timeout: ${GOOD}\n  connect_timeout: later\n"),
		"kiln.yaml", dir, LoadOptions{Getenv: env(nil)})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("load: got %v, want *Error", err)
	}
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	want := []string{
		filepath.Join(dir, ".env") + ":2: want KEY=value with a name of letters, digits and _, not starting with a digit",
		`kiln.yaml:4: gateway.connect_timeout: invalid duration "later"; use Go syntax such as 30s, 1m30s or 500ms`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestAliasesAreFollowed(t *testing.T) {
	const text = `
version: 1
backends:
  a: {command: npx, args: &args ["-y", "${PKG}"], env: &env {K: v}}
  b: {command: npx, args: *args, env: *env}
`
	c := mustLoad(t, text, map[string]string{"PKG": "p"})
	b, _ := c.Backend("b")
	got := []any{b.Args, b.Env, b.Vars}
	want := []any{[]string{"-y", "p"}, map[string]string{"K": "v"},
		[]VarRef{{Name: "PKG", Key: "backends.b.args[1]", Set: true}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	expectProblems(t, text+"  c: {command: *env}\n", nil, []string{
		"kiln.yaml:6: backends.c.command: is a mapping; want a single value"})
}

// TestEmptyMeansOff: metrics_addr: "" and semantic.sha256: "" are how the
// annotated example shows "off", so they load as unset, not as errors.
func TestEmptyMeansOff(t *testing.T) {
	cfg, err := LoadBytesWith([]byte("version: 1\ngateway:\n  metrics_addr: \"\"\n  semantic:\n    sha256: \"\"\n"), "kiln.yaml", t.TempDir(), LoadOptions{NoDotEnv: true, Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.MetricsAddr != "" || cfg.Gateway.Semantic.SHA256 != "" {
		t.Errorf("metrics_addr %q, sha256 %q: want both unset", cfg.Gateway.MetricsAddr, cfg.Gateway.Semantic.SHA256)
	}
}
