package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseBackend(t *testing.T) {
	base := &Config{Dir: t.TempDir(), Gateway: DefaultGateway()}
	base.Gateway.CallTimeout = 7 * time.Second
	tests := []struct {
		name, def string
		check     func(t *testing.T, b Backend)
		wantErr   string
	}{
		{name: "http with defaults", def: `{"transport":"http","url":"http://127.0.0.1:9/mcp"}`, check: func(t *testing.T, b Backend) {
			if b.Transport != TransportHTTP || b.URL != "http://127.0.0.1:9/mcp" || b.Timeout != 7*time.Second || b.MaxConcurrent != 100 || !b.Enabled {
				t.Errorf("got %+v", b)
			}
		}},
		{name: "stdio with own timeout", def: `{"command":"node","args":["s.js"],"env":{"Mixed_Case":"v"},"timeout":"2s"}`, check: func(t *testing.T, b Backend) {
			if b.Transport != TransportStdio || b.Command != "node" || b.Timeout != 2*time.Second || b.Env["Mixed_Case"] != "v" || b.Cwd != base.Dir {
				t.Errorf("got %+v", b)
			}
		}},
		{name: "not an object", def: `[1]`, wantErr: "register_manual: backends.x: want an object"},
		{name: "variable reference", def: `{"command":"sh","env":{"T":"${AWS_SECRET_ACCESS_KEY}"}}`, wantErr: "${VAR} references are not expanded"},
		{name: "unknown key with hint", def: `{"comand":"node"}`, wantErr: `register_manual: backends.x.comand: unknown key; did you mean "command"?`},
		{name: "url without transport", def: `{"url":"http://h/mcp"}`, wantErr: "register_manual: backends.x.transport: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBackend("x", []byte(tt.def), base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, b)
		})
	}
}
