package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// secretsAvailableTool names the secrets a Bash command of this workspace
// can read, never their values, so an agent knows whether GITHUB_TOKEN is
// there before a command fails without it. It reads the same lookups
// command() makes: a bash.env name reaches a command exactly when kiln's
// own environment has it set (a .env file beside the config feeds ${VAR}
// references, not the process environment, so it does not count).
func secretsAvailableTool(w *Workspace, _ context.Context, raw json.RawMessage) *toolcall.Result {
	var a struct{}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("secrets_available: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Variables a Bash command in workspace %q can read (names only; values are never shown):\n", w.name)
	var set, unset []string
	for _, name := range w.cfg.Bash.Env {
		v, ok := os.LookupEnv(name)
		switch {
		case !ok:
			unset = append(unset, name)
		case v == "":
			set = append(set, name+"\tset but empty\tfrom kiln's environment, passed by bash.env")
		default:
			set = append(set, name+"\tset\tfrom kiln's environment, passed by bash.env")
		}
	}
	if len(set) == 0 {
		b.WriteString("  none")
		if len(w.cfg.Bash.Env) == 0 {
			b.WriteString(" (this workspace's bash.env lists no variables; commands get only PATH, HOME, TMPDIR, LANG, TERM, the Go settings and the git identity)")
		}
		b.WriteString("\n")
	}
	for _, l := range set {
		b.WriteString("  " + l + "\n")
	}
	if len(unset) > 0 {
		fmt.Fprintf(&b, "Listed in bash.env but not set in kiln's environment, so commands do not get them (export them before starting kiln): %s\n", strings.Join(unset, ", "))
	}
	// ${VAR} references in this backend's own config: kiln uses their
	// values for the setting, a command sees them only through bash.env.
	var refs []string
	for _, v := range w.vars {
		state := "set"
		if !v.Set {
			state = "not set"
			if v.HasDefault {
				state += ", its default applies"
			}
		}
		reach := "kiln uses it for that setting; commands do not get it"
		if slices.Contains(w.cfg.Bash.Env, v.Name) {
			reach = "also in bash.env (above)"
		}
		refs = append(refs, fmt.Sprintf("  %s\t%s\treferenced by %s; %s", v.Name, state, v.Key, reach))
	}
	if len(refs) > 0 {
		b.WriteString("Secret references (${VAR}) in this workspace's config:\n" + strings.Join(refs, "\n") + "\n")
	}
	return toolcall.Text(w.capText(b.String()))
}
