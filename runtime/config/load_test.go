package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadFull(t *testing.T) {
	cfg, err := LoadWith("testdata/full.yaml", LoadOptions{Getenv: env(map[string]string{
		"GITHUB_TOKEN": "ghp_x",
		"TOKEN":        "t0k",
	})})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	want := &Config{
		Version:  1,
		Path:     "testdata/full.yaml",
		FromFile: true,
		Dir:      dir,
		Gateway: Gateway{
			Name:           "kiln-dev",
			StateDir:       filepath.Join(dir, "state"),
			CallTimeout:    45 * time.Second,
			ConnectTimeout: time.Minute,
			MaxOutputSize:  50000,
			LogLevel:       "debug",
			Sandbox: Sandbox{
				Timeout:       20 * time.Second,
				MaxTimeout:    2 * time.Minute,
				MemoryBytes:   64 << 20,
				MaxCalls:      20,
				MaxConcurrent: 4,
				QueueWait:     500 * time.Millisecond,
			},
			Output: Output{
				AutoChunkJSON:   true,
				IntentThreshold: 4000,
				ChunkThreshold:  8192,
				TruncateAt:      30000,
			},
			Health: Health{Interval: 10 * time.Second, Timeout: 2 * time.Second, Failures: 2},
			Registration: Registration{AllowCommands: []string{"npx", "/usr/local/bin/my-server"}, MaxBackends: 3, Persist: true,
				AllowHosts: []HostRule{
					{Name: "mcp.internal"},
					{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 3000},
					{Prefix: netip.MustParsePrefix("10.0.0.0/8")},
				}},
			HTTP: HTTP{
				AuthToken: "t0k", JWTIssuer: "https://issuer.example.test", JWKSURL: "https://issuer.example.test/jwks.json",
				Audience: "kiln", AllowedOrigins: []string{"https://app.example.test"}, AllowedHosts: []string{"kiln.internal:8080"},
				MaxBody: 1 << 20, MaxSessions: 8, MaxSessionsTotal: 40, SessionIdle: 2 * time.Minute,
				MaxConnections: 300, MaxConnectionsPerClient: 30, ReadTimeout: 15 * time.Second,
			},
			Semantic: Semantic{
				Model:   filepath.Join(dir, "models/all-MiniLM-L6-v2.Q8_0.gguf"),
				SHA256:  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Threads: 2,
			},
			Vectors:      Vectors{Top: 30000, Fusion: "rerank", Depth: 30},
			Audit:        Audit{MaxSize: 100 << 20, Keep: 5, Flush: 200 * time.Millisecond},
			Expose:       ExposeHybrid,
			Pin:          []string{"everything.echo", "remote.*"},
			MetricsAddr:  "127.0.0.1:9464",
			DrainTimeout: 5 * time.Second,
			StateURL:     "redis://127.0.0.1:6379/2",
		},
		Backends: []Backend{
			{
				Name:      "everything",
				Transport: TransportStdio,
				Command:   "node",
				Args:      []string{"tests/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"},
				Env: map[string]string{
					"GITHUB_TOKEN":     "ghp_x",
					"MEMORY_FILE_PATH": filepath.Join(dir, "state", "memory.json"),
					"PORT":             "3101",
				},
				Cwd:           filepath.Dir(dir),
				Timeout:       10 * time.Second,
				MaxConcurrent: 2,
				QueueWait:     time.Second,
				Enabled:       true,
				Bare:          true,
				Required:      true,
				Vars: []VarRef{
					{Name: "GITHUB_TOKEN", Key: "backends.everything.env.GITHUB_TOKEN", Set: true},
				},
			},
			{
				Name:          "legacy",
				Transport:     TransportSSE,
				URL:           "https://example.test/sse",
				Timeout:       45 * time.Second,
				MaxConcurrent: 100, QueueWait: 10 * time.Second,
			},
			{
				Name:          "remote",
				Transport:     TransportHTTP,
				URL:           "http://127.0.0.1:3101/mcp",
				Headers:       map[string]string{"Authorization": "Bearer t0k", "X-Api-Key": "none"},
				Timeout:       45 * time.Second,
				MaxConcurrent: 100, QueueWait: 10 * time.Second,
				Enabled: true,
				Vars: []VarRef{
					{Name: "API_KEY", Key: "backends.remote.headers.X-Api-Key", HasDefault: true},
					{Name: "TOKEN", Key: "backends.remote.headers.Authorization", Set: true},
				},
			},
		},
	}
	if diff := cmp.Diff(want, cfg, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := LoadWith("testdata/minimal.yaml", LoadOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultGateway()
	want.StateDir = filepath.Join(cfg.Dir, ".kiln")
	if diff := cmp.Diff(want, cfg.Gateway); diff != "" {
		t.Errorf("gateway (-want +got):\n%s", diff)
	}
	b, ok := cfg.Backend("memory")
	if !ok {
		t.Fatal("backend memory missing")
	}
	wantB := Backend{
		Name: "memory", Transport: TransportStdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-memory"},
		Cwd:  cfg.Dir, Timeout: 30 * time.Second, MaxConcurrent: 10, QueueWait: 10 * time.Second, Enabled: true,
	}
	if diff := cmp.Diff(wantB, *b); diff != "" {
		t.Errorf("backend (-want +got):\n%s", diff)
	}
}

func TestLoadVars(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		exp  []any
	}{
		{
			name: "defaults",
			exp: []any{30 * time.Second, "info", "npx", "", "$5", true,
				TransportHTTP, "http://127.0.0.1:3102/mcp", "Bearer ", 2 * time.Minute},
		},
		{
			name: "set",
			vars: map[string]string{
				"CALL_TIMEOUT": "5s", "LOG_LEVEL": "WARN", "NPX": "/usr/bin/npx", "GITHUB_TOKEN": "ghp",
				"GITHUB_ENABLED": "false", "SEARCH_TRANSPORT": "sse", "SEARCH_URL": "https://s.test/sse",
				"SEARCH_TOKEN": "abc", "SEARCH_TIMEOUT": "1s",
			},
			exp: []any{5 * time.Second, "warn", "/usr/bin/npx", "ghp", "$5", false,
				TransportSSE, "https://s.test/sse", "Bearer abc", time.Second},
		},
		{
			// ${VAR:-default} uses the default for an empty value too, as a shell does.
			name: "empty uses default",
			vars: map[string]string{"CALL_TIMEOUT": "", "SEARCH_URL": ""},
			exp: []any{30 * time.Second, "info", "npx", "", "$5", true,
				TransportHTTP, "http://127.0.0.1:3102/mcp", "Bearer ", 2 * time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadWith("testdata/vars.yaml", LoadOptions{Getenv: env(tt.vars)})
			if err != nil {
				t.Fatal(err)
			}
			gh, _ := c.Backend("github")
			s, _ := c.Backend("search-api")
			got := []any{c.Gateway.CallTimeout, c.Gateway.LogLevel, gh.Command, gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"],
				gh.Env["PRICE"], gh.Enabled, s.Transport, s.URL, s.Headers["Authorization"], s.Timeout}
			if diff := cmp.Diff(tt.exp, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVarRefs(t *testing.T) {
	c := mustLoad(t, `
version: 1
backends:
  a:
    command: ${BIN_DIR:-/usr/bin}/tool
    args: ["--token=${TOKEN}", "${TOKEN}${TOKEN}", "${A:-${B}}"]
    env: {Z: "${TOKEN}"}
`, map[string]string{"TOKEN": "x", "B": "b"})
	want := []VarRef{
		{Name: "A", Key: "backends.a.args[2]", HasDefault: true},
		// B only matters when A is empty, so it is optional too.
		{Name: "B", Key: "backends.a.args[2]", HasDefault: true, Set: true},
		{Name: "BIN_DIR", Key: "backends.a.command", HasDefault: true},
		{Name: "TOKEN", Key: "backends.a.args[0]", Set: true},
		{Name: "TOKEN", Key: "backends.a.args[1]", Set: true},
		{Name: "TOKEN", Key: "backends.a.env.Z", Set: true},
	}
	if diff := cmp.Diff(want, c.Backends[0].Vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--token=x", "xx", "b"}, c.Backends[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestEnvCaseReachesSubprocess guards against viper's key lowercasing: the
// variable must reach the backend under the name written in the config.
func TestEnvCaseReachesSubprocess(t *testing.T) {
	c := mustLoad(t, `
version: 1
backends:
  probe:
    command: sh
    args: ["-c", 'printf "%s|%s|%s|%s" "$GITHUB_TOKEN" "$github_token" "$X_Mixed_Case" "$(basename "$PWD")"']
    env:
      GITHUB_TOKEN: ${GITHUB_TOKEN}
      X_Mixed_Case: kept
    cwd: sub
`, map[string]string{"GITHUB_TOKEN": "ghp_secret"})
	b := c.Backends[0]
	if err := os.Mkdir(b.Cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), b.Command, b.Args...)
	cmd.Dir = b.Cwd
	cmd.Env = b.Environ([]string{"PATH=" + os.Getenv("PATH"), "GITHUB_TOKEN=from-base"})
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "ghp_secret||kept|sub"; got != want {
		t.Errorf("subprocess saw %q, want %q", got, want)
	}
}

func TestHeaderCase(t *testing.T) {
	c := mustLoad(t, `
version: 1
backends:
  r:
    transport: http
    url: https://h.test/mcp
    headers: {Authorization: "Bearer ${T}", X-API-Key: k, x-lower: l}
`, map[string]string{"T": "t"})
	want := map[string]string{"Authorization": "Bearer t", "X-API-Key": "k", "x-lower": "l"}
	if diff := cmp.Diff(want, c.Backends[0].Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestOverrides(t *testing.T) {
	const text = `
version: 1
gateway:
  log_level: info
backends:
  my-server:
    command: srv
  remote:
    transport: http
    url: http://a.test/mcp
`
	type got struct {
		CallTimeout, MyTimeout, RemoteTimeout time.Duration
		Name, LogLevel, URL                   string
		MyEnabled                             bool
	}
	tests := []struct {
		name   string
		vars   map[string]string
		dotenv string
		want   got
	}{
		{
			name: "none",
			want: got{30 * time.Second, 30 * time.Second, 30 * time.Second, "kiln", "info", "http://a.test/mcp", true},
		},
		{
			name: "gateway and backends",
			vars: map[string]string{
				"KILN_GATEWAY_CALL_TIMEOUT":       "10s",
				"KILN_BACKENDS_MY_SERVER_TIMEOUT": "5s",
				"KILN_BACKENDS_MY_SERVER_ENABLED": "false",
				"KILN_BACKENDS_REMOTE_URL":        "https://${HOST}/mcp",
				"HOST":                            "b.test",
				"KILN_GATEWAY_NAME":               "", // empty: ignored
			},
			want: got{10 * time.Second, 5 * time.Second, 10 * time.Second, "kiln", "info", "https://b.test/mcp", false},
		},
		{
			name:   "from .env",
			dotenv: "KILN_GATEWAY_LOG_LEVEL=warn\nKILN_GATEWAY_NAME=dotenv\n",
			want:   got{30 * time.Second, 30 * time.Second, 30 * time.Second, "dotenv", "warn", "http://a.test/mcp", true},
		},
		{
			name:   "process env beats .env",
			vars:   map[string]string{"KILN_GATEWAY_LOG_LEVEL": "error"},
			dotenv: "KILN_GATEWAY_LOG_LEVEL=warn\n",
			want:   got{30 * time.Second, 30 * time.Second, 30 * time.Second, "kiln", "error", "http://a.test/mcp", true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadYAML(t, text, tt.vars, tt.dotenv)
			if err != nil {
				t.Fatal(err)
			}
			my, _ := c.Backend("my-server")
			r, _ := c.Backend("remote")
			g := got{c.Gateway.CallTimeout, my.Timeout, r.Timeout, c.Gateway.Name, c.Gateway.LogLevel, r.URL, my.Enabled}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDotEnvFeedsExpansion(t *testing.T) {
	const key = "KILN_CONFIG_TEST_DOTENV_ONLY"
	c, err := loadYAML(t, `
version: 1
backends:
  a:
    command: x
    env: {A: "${`+key+`}", B: "${SHADOWED}"}
`, map[string]string{"SHADOWED": "process"}, key+"=from-dotenv\nSHADOWED=dotenv\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "from-dotenv", "B": "process"}
	if diff := cmp.Diff(want, c.Backends[0].Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if !c.Backends[0].Vars[0].Set {
		t.Errorf("a variable from .env reports Set = false")
	}
	if _, ok := os.LookupEnv(key); ok {
		t.Errorf(".env leaked into the process environment")
	}
}

func TestLoadReadsProcessEnv(t *testing.T) {
	t.Setenv("KILN_CONFIG_TEST_TOKEN", "abc")
	path := filepath.Join(t.TempDir(), "kiln.yaml")
	text := "version: 1\nbackends:\n  a:\n    command: x\n    env: {T: \"${KILN_CONFIG_TEST_TOKEN}\"}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Backends[0].Env["T"]; got != "abc" {
		t.Errorf("T = %q, want abc", got)
	}
}

func TestLoadBytesEmbedded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("CMD=from-env-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadBytesWith([]byte("version: 1\nbackends:\n  a:\n    command: ${CMD}\n    cwd: w\n"),
		"embedded kiln.yaml", dir, LoadOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{c.Path, c.Dir, c.Backends[0].Command, c.Backends[0].Cwd, c.Gateway.StateDir}
	want := []string{"embedded kiln.yaml", dir, "from-env-file", filepath.Join(dir, "w"), filepath.Join(dir, ".kiln")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, err = LoadBytes([]byte("version: 1\nbogus: 1\n"), "embedded kiln.yaml", dir)
	if want := "embedded kiln.yaml:2: bogus: unknown key; the keys here are version, gateway, backends, profiles or policies"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "kiln.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error = %v, want fs.ErrNotExist", err)
	}
}

func TestEnviron(t *testing.T) {
	b := &Backend{Env: map[string]string{"B": "new", "A": "a", "Path": "p"}}
	base := []string{"PATH=/bin", "B=old", "C=c", "B=older", "NOEQUALS"}
	got := b.Environ(base)
	want := []string{"PATH=/bin", "C=c", "NOEQUALS", "A=a", "B=new", "Path=p"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if base[1] != "B=old" {
		t.Errorf("Environ modified base")
	}
	if diff := cmp.Diff([]string{"X=1"}, (&Backend{}).Environ([]string{"X=1"})); diff != "" {
		t.Errorf("no env (-want +got):\n%s", diff)
	}
}

func TestEditHint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kiln.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fromFile.EditHint(); got != path {
		t.Errorf("EditHint of a file config = %q, want %q", got, path)
	}
	embedded, err := LoadBytes([]byte("version: 1\n"), "embedded kiln.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := embedded.EditHint(); !strings.Contains(got, "--config") || !strings.Contains(got, "embedded kiln.yaml") {
		t.Errorf("EditHint of the compiled-in config = %q; it must say how to supply a file", got)
	}
}
