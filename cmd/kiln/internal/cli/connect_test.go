package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Mistakes in kiln connect's and kiln serve --daemon's flags are refused
// before anything starts, with the fix.
func TestConnectFlags(t *testing.T) {
	xdg, err := os.MkdirTemp("", "kdc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	if err := os.WriteFile(cfg, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"idle too short", []string{"connect", "--config", cfg, "--idle", "10ms"}, exitUsage, "--idle 10ms is out of range; use 1s to 168h0m0s"},
		{"daemon with http", []string{"serve", "--config", cfg, "--daemon", "--http", "127.0.0.1:0"}, exitUsage, "cannot be combined with --http"},
		{"daemon idle too long", []string{"serve", "--config", cfg, "--daemon", "--idle", "800h"}, exitUsage, "--idle 800h0m0s is out of range"},
		{"status with no daemon", []string{"connect", "--config", cfg, "--status"}, exitFail, "no kiln daemon serves"},
		{"stop with no daemon", []string{"connect", "--config", cfg, "--stop"}, exitOK, "no kiln daemon serves"},
		{"bad config", []string{"connect", "--config", "/nonexistent/kiln.yaml"}, exitUsage, "/nonexistent/kiln.yaml"},
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
