package workspace

import (
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/scrub"
)

// TestSecretsAvailable: bash.env entries set, empty and unset are told
// apart, and what it says matches what a Bash command really reads; the
// planted value never appears, raw or after the real scrubber.
func TestSecretsAvailable(t *testing.T) {
	const value = "planted-Secret-Value-9d2f0c"
	t.Setenv("KILN_SA_TOKEN", value)
	t.Setenv("KILN_SA_EMPTY", "")
	f := newFixture(t, func(c *config.Workspace) { c.Bash.Env = []string{"KILN_SA_TOKEN", "KILN_SA_EMPTY", "KILN_SA_UNSET"} })
	// The config's ${VAR} references, as config.Load records them for
	// this backend (the fixture builds the workspace without a file).
	f.w.vars = []config.VarRef{{Name: "KILN_SA_IDENT", Key: "backends.repo.bash.git_identity", HasDefault: true}}
	got := f.expectOK("secrets_available", map[string]any{})
	for _, want := range []string{
		"KILN_SA_TOKEN\tset\tfrom kiln's environment, passed by bash.env",
		"KILN_SA_EMPTY\tset but empty",
		"not set in kiln's environment, so commands do not get them (export them before starting kiln): KILN_SA_UNSET",
		"KILN_SA_IDENT\tnot set, its default applies\treferenced by backends.repo.bash.git_identity; kiln uses it for that setting; commands do not get it",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("secrets_available lacks %q:\n%s", want, got)
		}
	}
	sc := scrub.New(scrub.Options{Values: []scrub.Value{{Name: "KILN_SA_TOKEN", Value: value}}})
	if strings.Contains(got, value) || strings.Contains(sc.String(got), value) {
		t.Fatalf("the value came back:\n%s", got)
	}
	// What it says is what a command gets.
	bash := f.expectOK("Bash", map[string]any{"command": `echo "token=${#KILN_SA_TOKEN} empty=${KILN_SA_EMPTY-unset} unset=${KILN_SA_UNSET-unset}"`})
	if !strings.Contains(bash, "token=27 empty= unset=unset") {
		t.Errorf("Bash sees %s", bash)
	}
	// Without bash.env there is nothing, and it says why.
	g := newFixture(t, nil)
	if got := g.expectOK("secrets_available", map[string]any{}); !strings.Contains(got, "bash.env lists no variables") || strings.Contains(got, "KILN_SA_TOKEN") {
		t.Errorf("secrets_available without bash.env:\n%s", got)
	}
}
