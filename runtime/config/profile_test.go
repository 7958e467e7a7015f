package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProfiles(t *testing.T) {
	cfg, err := LoadBytes([]byte(`version: 1
gateway:
  expose: hybrid
  pin: [everything.echo]
profiles:
  ci:
    tools: ["github.*"]
    expose: direct
  ops:
    tools: ["everything.*"]
  pinned:
    tools: ["everything.*"]
    expose: hybrid
    pin: ["everything.get-sum"]
`), "kiln.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []Profile{
		{Name: "ci", Line: 6, Tools: []string{"github.*"}, Expose: ExposeDirect},
		{Name: "ops", Line: 9, Tools: []string{"everything.*"}, Expose: ExposeHybrid, Pin: []string{"everything.echo"}},
		{Name: "pinned", Line: 11, Tools: []string{"everything.*"}, Expose: ExposeHybrid, Pin: []string{"everything.get-sum"}},
	}
	if d := cmp.Diff(want, cfg.Profiles); d != "" {
		t.Errorf("profiles (-want +got):\n%s", d)
	}
	p, _ := cfg.Profile("ci")
	if v := cfg.ForProfile(p); v.Gateway.Expose != ExposeDirect || v.Gateway.Pin != nil || cfg.Gateway.Expose != ExposeHybrid {
		t.Errorf("ForProfile: %+v, and the gateway's config must stay as it was", v.Gateway.Expose)
	}
	for _, c := range []struct{ yaml, want string }{
		{"profiles:\n  Bad:\n    tools: ['*']\n", "not a profile name"},
		{"profiles:\n  x: {}\n", "profiles.x.tools: missing"},
		{"profiles:\n  x: {tools: ['*'], expose: everything}\n", "not an exposure mode"},
		{"profiles:\n  x: {tools: ['*'], pin: [a.b]}\n", "only read when the profile's expose is hybrid"},
		{"profiles:\n  x: {tools: ['*'], expose: hybrid, pin: [nodot]}\n", "names no tool"},
		{"profiles:\n  x: {tools: ['*'], tool: [a]}\n", `did you mean "tools"`},
	} {
		_, err := LoadBytes([]byte("version: 1\n"+c.yaml), "kiln.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
