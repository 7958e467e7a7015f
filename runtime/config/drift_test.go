package config

import (
	"testing"
)

// TestDriftMode checks the accessor other packages read drift through:
// a backend's own key beats gateway.drift, which beats the default (pin),
// and explicit tells a mode someone wrote from the default.
func TestDriftMode(t *testing.T) {
	type want struct {
		mode     DriftMode
		explicit bool
	}
	tests := []struct {
		name string
		yaml string
		vars map[string]string
		want map[string]want // backend name → mode
	}{
		{"default is pin, not explicit", "version: 1\nbackends:\n  a:\n    command: x\n", nil,
			map[string]want{"a": {DriftPin, false}, "unnamed": {DriftPin, false}}},
		{"gateway-wide", "version: 1\ngateway:\n  drift: warn\nbackends:\n  a:\n    command: x\n", nil,
			map[string]want{"a": {DriftWarn, true}, "unnamed": {DriftWarn, true}}},
		{"gateway pin written out is explicit", "version: 1\ngateway:\n  drift: pin\n", nil,
			map[string]want{"a": {DriftPin, true}}},
		{"backend overrides gateway", "version: 1\ngateway:\n  drift: follow\nbackends:\n  a:\n    command: x\n    drift: pin\n  b:\n    command: x\n", nil,
			map[string]want{"a": {DriftPin, true}, "b": {DriftFollow, true}}},
		{"backend alone", "version: 1\nbackends:\n  a:\n    command: x\n    drift: follow\n  b:\n    command: x\n", nil,
			map[string]want{"a": {DriftFollow, true}, "b": {DriftPin, false}}},
		{"case and spaces", "version: 1\ngateway:\n  drift: ' Warn '\n", nil,
			map[string]want{"a": {DriftWarn, true}}},
		{"environment overrides", "version: 1\ngateway:\n  drift: pin\nbackends:\n  my-server:\n    command: x\n",
			map[string]string{"KILN_GATEWAY_DRIFT": "warn", "KILN_BACKENDS_MY_SERVER_DRIFT": "follow"},
			map[string]want{"my-server": {DriftFollow, true}, "other": {DriftWarn, true}}},
		{"a variable", "version: 1\ngateway:\n  drift: ${MODE:-follow}\n", nil,
			map[string]want{"a": {DriftFollow, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.yaml, tt.vars)
			for name, w := range tt.want {
				mode, explicit := c.DriftMode(name)
				if mode != w.mode || explicit != w.explicit {
					t.Errorf("DriftMode(%q) = %q, %v; want %q, %v", name, mode, explicit, w.mode, w.explicit)
				}
			}
		})
	}
}

func TestDriftProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown gateway mode with alias", "version: 1\ngateway:\n  drift: strict\n", []string{
			`kiln.yaml:3: gateway.drift: unknown drift mode "strict"; use pin, warn or follow (did you mean pin?)`}},
		{"typo", "version: 1\ngateway:\n  drift: folow\n", []string{
			`kiln.yaml:3: gateway.drift: unknown drift mode "folow"; use pin, warn or follow (did you mean follow?)`}},
		{"unknown backend mode", "version: 1\nbackends:\n  a:\n    command: x\n    drift: yes\n", []string{
			`kiln.yaml:5: backends.a.drift: unknown drift mode "yes"; use pin, warn or follow`}},
		{"on a workspace backend", "version: 1\nbackends:\n  repo:\n    transport: workspace\n    root: .\n    drift: pin\n", []string{
			`kiln.yaml:6: backends.repo.drift: not used by workspace backends: their tools are kiln's own, served from its source, so there is no manifest to drift from; remove it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, tt.yaml, nil, tt.want)
		})
	}
}
