package config

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The keys version 1 accepts. The schema test checks that schema/v1.json
// declares exactly these, so the two cannot drift.
var (
	topKeys     = []string{"version", "gateway", "backends"}
	gatewayKeys = []string{"name", "state_dir", "call_timeout", "connect_timeout", "max_output_size", "log_level",
		"sandbox", "output", "health", "registration", "http", "semantic", "expose", "pin", "metrics_addr", "drain_timeout", "state_url"}
	sandboxKeys      = []string{"timeout", "max_timeout", "memory", "max_calls", "max_concurrent", "queue_wait"}
	outputKeys       = []string{"intent_filter", "auto_chunk_json", "smart_truncation", "size_footer", "intent_threshold", "chunk_threshold", "truncate_at"}
	healthKeys       = []string{"interval", "timeout", "failures"}
	registrationKeys = []string{"allow_commands", "allow_hosts", "max_backends", "persist"}
	httpKeys         = []string{"auth_token", "jwt_issuer", "jwks_url", "audience", "allowed_origins", "allowed_hosts", "max_body", "max_sessions", "max_sessions_total", "session_idle", "max_connections", "max_connections_per_client", "read_timeout"}
	semanticKeys     = []string{"model", "sha256", "threads"}
	backendKeys      = []string{"transport", "command", "args", "env", "cwd", "url", "headers", "timeout", "enabled", "max_concurrent", "queue_wait", "bare",
		"root", "readonly", "max_output", "bash", "auth", "required"}
	// bashKeys are a workspace backend's bash section; env there is a list
	// of variable names, read from the node tree.
	bashKeys = []string{"timeout", "max_timeout", "env", "network", "unconfined"}
	// authKeys are the settings under a backend's auth: (authbuild.go).
	authKeys = []string{"grant", "client_id", "client_secret", "client_metadata_url", "token_endpoint_auth", "private_key", "signing_alg", "scopes", "redirect_url"}

	// sectionKeys maps each mapping of settings to its keys. A key whose
	// own path is listed here holds a nested section; the others hold
	// scalars, layered through viper and overridable by KILN_<PATH>_<KEY>.
	sectionKeys = map[string][]string{
		"gateway":              gatewayKeys,
		"gateway.sandbox":      sandboxKeys,
		"gateway.output":       outputKeys,
		"gateway.health":       healthKeys,
		"gateway.registration": registrationKeys,
		"gateway.http":         httpKeys,
		"gateway.semantic":     semanticKeys,
	}

	// sectionListKeys hold lists of scalars; they are read from the node
	// tree, like args, and cannot be overridden from the environment.
	sectionListKeys = map[string]bool{
		"gateway.registration.allow_commands": true,
		"gateway.registration.allow_hosts":    true,
		"gateway.http.allowed_origins":        true,
		"gateway.http.allowed_hosts":          true,
		"gateway.pin":                         true,
	}

	// backendScalarKeys are layered through viper and can be overridden by
	// KILN_BACKENDS_<NAME>_<KEY>; lists and maps cannot.
	backendScalarKeys = []string{"transport", "command", "cwd", "url", "timeout", "enabled", "max_concurrent", "queue_wait", "bare",
		"root", "readonly", "max_output", "required"}

	stdioOnlyKeys     = []string{"command", "args", "env", "cwd"}
	remoteOnlyKeys    = []string{"url", "headers", "auth"}
	workspaceOnlyKeys = []string{"root", "readonly", "max_output", "bash"}

	transports  = []string{TransportStdio, TransportHTTP, TransportSSE, TransportWorkspace}
	logLevels   = []string{"debug", "info", "warn", "error"}
	exposeModes = []string{ExposeMeta, ExposeDirect, ExposeHybrid}
)

// nameRE is the shape of a backend name: it becomes part of tool IDs
// ("github.create_issue"), generated identifiers and environment variable
// names, so it stays lowercase ASCII.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// reservedNames cannot name a backend: "backend.tool" IDs and bare meta-tool
// names share one namespace in search results and call_tool_chain scripts.
var reservedNames = []string{
	"kiln",
	"search_tools", "list_tools_meta", "tool_info", "get_required_keys_for_tool",
	"call_tool_chain", "register_manual", "deregister_manual",
}

// keyAliases maps names people bring from other tools' configs to ours,
// for "did you mean" hints that edit distance would miss.
var keyAliases = map[string]string{
	"mcpservers": "backends", "servers": "backends", "backend": "backends",
	"cmd": "command", "arguments": "args", "argv": "args",
	"environment": "env", "envs": "env",
	"dir": "cwd", "workdir": "cwd", "working_dir": "cwd", "directory": "cwd",
	"endpoint": "url", "uri": "url", "type": "transport",
	"disabled": "enabled", "timeout": "call_timeout",
	"loglevel": "log_level", "level": "log_level",
	"memory_limit": "memory", "max_memory": "memory", "mem": "memory",
	"concurrency": "max_concurrent", "max_parallel": "max_concurrent",
}

// transportAliases maps other spellings of a transport to ours.
var transportAliases = map[string]string{
	"streamable-http": TransportHTTP, "streamable_http": TransportHTTP,
	"streamablehttp": TransportHTTP, "streamable": TransportHTTP, "https": TransportHTTP,
	"http+sse": TransportSSE, "server-sent-events": TransportSSE,
	"subprocess": TransportStdio, "process": TransportStdio,
}

// scalarKeys returns the keys of section path that hold scalars.
func scalarKeys(path string) []string {
	var out []string
	for _, k := range sectionKeys[path] {
		if _, nested := sectionKeys[path+"."+k]; !nested && !sectionListKeys[path+"."+k] {
			out = append(out, k)
		}
	}
	return out
}

// suggest returns the known word closest to an unknown one, or "".
func suggest(word string, known []string) string {
	w := strings.ToLower(strings.ReplaceAll(word, "-", "_"))
	if a, ok := keyAliases[w]; ok && slices.Contains(known, a) {
		return a
	}
	best, bestD := "", max(1, len(w)/3)+1
	for _, k := range known {
		d := distance(w, k)
		if len(k) >= 3 && (strings.HasPrefix(w, k) || strings.HasPrefix(k, w)) {
			d = 1 // "warning" for warn, "head" for headers
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions, the commonest typo) between a and b, in bytes:
// keys are ASCII, and a poor guess on other input only costs a hint.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// overrideName is the environment variable that overrides a key path:
// backends.my-server.timeout -> KILN_BACKENDS_MY_SERVER_TIMEOUT.
func overrideName(key string) string {
	return "KILN_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// keyPath appends key to a dotted path, bracketing keys (env or header
// names) that would make the path ambiguous.
func keyPath(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// listOr renders ["a","b","c"] as "a, b or c".
func listOr(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
