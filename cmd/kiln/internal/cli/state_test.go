package cli

import (
	"testing"

	"github.com/kilnmcp/kiln/runtime/config"
)

// A password in gateway.state_url is one of the secrets the scrubber
// redacts; a URL without one adds nothing.
func TestStateURLSecret(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string
	}{
		{"redis://:s3cret-pass@redis:6379/0", "s3cret-pass"},
		{"redis://kiln:s3cret-pass@redis:6379/0", "s3cret-pass"},
		{"redis://redis:6379/0", ""},
		{"", ""},
	} {
		cfg := &config.Config{Gateway: config.Gateway{StateURL: tc.url}}
		got := stateURLSecret(cfg)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%q: secrets %v, want none", tc.url, got)
		case tc.want != "" && (len(got) != 1 || got[0].Value != tc.want || got[0].Name != "gateway.state_url"):
			t.Errorf("%q: secrets %v, want the password under gateway.state_url", tc.url, got)
		}
	}
}
