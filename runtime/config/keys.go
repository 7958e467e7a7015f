package config

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// nameRE is the shape of a backend name: it becomes part of tool IDs
// ("github.create_issue"), generated identifiers and environment variable
// names, so it stays lowercase ASCII.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

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
	for _, k := range keyTable {
		if k.parent() == path && k.isScalar() {
			out = append(out, k.name())
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
