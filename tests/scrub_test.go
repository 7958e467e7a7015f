//go:build e2e

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// plantedCase is one case of runtime/scrub/testdata/planted.txt: text with
// secrets marked ⟦type|value⟧.
type plantedCase struct {
	name, text string
	values     []string
}

var plantRE = regexp.MustCompile(`⟦([^|⟧]+)\|([^⟧]*)⟧`)

func readPlanted(t *testing.T) (cases []plantedCase, env map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "runtime/scrub/testdata/planted.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env = map[string]string{}
	var cur *plantedCase
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			cases = append(cases, plantedCase{name: strings.TrimPrefix(line, "### ")})
			cur = &cases[len(cases)-1]
		case cur == nil || strings.HasPrefix(line, "#"):
		default:
			for _, m := range plantRE.FindAllStringSubmatch(line, -1) {
				cur.values = append(cur.values, m[2])
				if name, ok := strings.CutPrefix(m[1], "env:"); ok {
					env[name] = m[2]
				}
			}
			cur.text += plantRE.ReplaceAllString(line, "$2") + "\n"
		}
	}
	return cases, env
}

// TestSecretsNeverLeaveKiln sends every planted secret through each path
// text leaves kiln by — a tier-1 result, a tier-3 return value and console
// output, a backend's isError message, kiln's own error text, a resource —
// and checks that none survives. Config-known values are passed to the
// backend as ${VAR} references, as operators do.
func TestSecretsNeverLeaveKiln(t *testing.T) {
	cases, env := readPlanted(t)
	var refs []string
	for name, v := range env {
		t.Setenv(name, v)
		refs = append(refs, fmt.Sprintf("      %s: \"${%s}\"", name, name))
	}
	cfg := func(extra string) string {
		return fmt.Sprintf(`version: 1
gateway:
  state_dir: %s
  registration:
    allow_commands: [%s]
backends:
  memory:
    command: %s
    drift: warn   # the fault server's live tools, not memory's reviewed ones
    env:
%s%s
`, t.TempDir(), faultBin(t), faultBin(t), strings.Join(refs, "\n"), extra)
	}
	k := startFaultKilnWith(t, cfg(""))
	eventually(t, "the backend serves its live tools", func() bool {
		r := k.chain(t.Context(), `await memory.echo({text: "up"})`)
		return !r.IsError
	})
	paths := map[string]func(text string) string{
		"tier 1 result": func(text string) string {
			code, _ := json.Marshal(map[string]any{"tool": "memory.echo", "arguments": map[string]any{"text": text}})
			return k.chain(t.Context(), string(code)).Text()
		},
		"tier 3 value and console": func(text string) string {
			lit, _ := json.Marshal(text)
			return k.chain(t.Context(), fmt.Sprintf(`const s = %s; console.log(s); return await memory.echo({text: s});`, lit)).Text()
		},
		"backend isError": func(text string) string {
			code, _ := json.Marshal(map[string]any{"tool": "memory.fail", "arguments": map[string]any{"message": text}})
			return k.chain(t.Context(), string(code)).Text()
		},
		"kiln error text": func(text string) string {
			return k.call(t.Context(), "tool_info", map[string]any{"tool_name": "memory." + text}, nil).Text()
		},
	}
	total, leaked := 0, 0
	for path, send := range paths {
		for _, c := range cases {
			out := send(c.text)
			for _, v := range c.values {
				total++
				if strings.Contains(out, v) {
					leaked++
					t.Errorf("%s, case %q: %q leaked:\n%s", path, c.name, v, out)
				}
			}
		}
	}

	// Secrets that arrive later are learned: a registration's env value,
	// and a value a config edit adds.
	const regSecret, reloadSecret = "regsecret-5150-value", "reloadsecret-8080-value"
	if _, r := k.register("reg", map[string]string{"REG_API_TOKEN": regSecret}, nil); r.IsError {
		t.Fatal(r.Text())
	}
	if out := k.chain(t.Context(), `await memory.echo({text: "`+regSecret+`"})`).Text(); strings.Contains(out, regSecret) {
		t.Errorf("a registered backend's secret leaked: %s", out)
	}
	if err := os.WriteFile(k.config, []byte(cfg("\n      NEW_API_TOKEN: "+reloadSecret)), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit is applied", func() bool { return k.logged("config reloaded") })
	eventually(t, "memory serves again after its restart", func() bool {
		return !k.chain(t.Context(), `await memory.echo({text: "up"})`).IsError
	})
	if out := k.chain(t.Context(), `await memory.echo({text: "`+reloadSecret+`"})`).Text(); strings.Contains(out, reloadSecret) {
		t.Errorf("a secret added by a config edit leaked: %s", out)
	}

	if res := k.resource("kiln://recent"); strings.Contains(res, env["NOTION_TOKEN"]) {
		t.Error("a planted value reached kiln://recent")
	}
	if k.logged(env["NOTION_TOKEN"]) || k.logged(env["HOOK_SECRET"]) {
		t.Error("a config-known secret reached kiln's log")
	}
	t.Logf("planted secrets redacted: %d of %d (%.1f%%) over %d output paths", total-leaked, total, 100*float64(total-leaked)/float64(total), len(paths))
}
