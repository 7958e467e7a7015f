package backend

import (
	"slices"
	"strings"
)

// inheritedNames are the variables a stdio backend gets from kiln's own
// environment, as MCP clients do (the TypeScript SDK's default set: HOME,
// LOGNAME, PATH, SHELL, TERM, USER), plus locale, time zone, temp dir and
// the dynamic loader's search path (a program built against libraries
// outside the system folders cannot start without it; it holds no secret).
// Everything else kiln was started with (its HTTP token, cloud
// credentials, other backends' keys) stays out; a backend that needs more
// names it in its config's env.
var inheritedNames = []string{"HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH"}

// inheritedEnv keeps the entries of env (os.Environ's form) a backend
// inherits: inheritedNames and the LC_* locale settings.
func inheritedEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(inheritedNames, name) || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}
