package config

import "testing"

// gateway.state_url comes from the file with ${VAR} expanded (how a
// password is passed), or from KILN_GATEWAY_STATE_URL (how the Helm chart
// and deploy/local-fleet.sh set it); unset, it stays empty (state_dir).
func TestStateURLSources(t *testing.T) {
	tests := []struct {
		name, text string
		vars       map[string]string
		want       string
	}{
		{"unset", "version: 1\n", nil, ""},
		{"file with a password variable", "version: 1\ngateway:\n  state_url: redis://:${REDIS_PASSWORD}@redis:6379/1\n",
			map[string]string{"REDIS_PASSWORD": "s3cret"}, "redis://:s3cret@redis:6379/1"},
		{"environment override", "version: 1\ngateway:\n  state_url: redis://file:6379/0\n",
			map[string]string{"KILN_GATEWAY_STATE_URL": "unix:///run/redis/redis.sock"}, "unix:///run/redis/redis.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadYAML(t, tt.text, tt.vars, "")
			if err != nil {
				t.Fatal(err)
			}
			if c.Gateway.StateURL != tt.want {
				t.Errorf("StateURL = %q, want %q", c.Gateway.StateURL, tt.want)
			}
		})
	}
}
