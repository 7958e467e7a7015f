package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nbackends:\n  x:\n    transport: grpc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, exitUsage, "usage: kiln"},
		{"version", []string{"--version"}, exitOK, "kiln "},
		{"unknown", []string{"start"}, exitUsage, `unknown command "start"`},
		{"bad config names file, key and fix", []string{"serve", "--config", bad}, exitUsage, `kiln.yaml:4: backends.x.transport: unknown transport "grpc"; use stdio, http, sse or workspace`},
		{"missing config", []string{"serve", "--config", "/nonexistent/kiln.yaml"}, exitUsage, "/nonexistent/kiln.yaml"},
		{"bad http address", []string{"serve", "--config", bad, "--http", "nonsense"}, exitUsage, "kiln.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tc.args, strings.NewReader(""), &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Errorf("exit %d (want %d); output:\n%s%s", code, tc.code, out.String(), errOut.String())
			}
		})
	}
}
