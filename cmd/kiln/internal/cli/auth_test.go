package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthCommands(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "kiln.yaml")
	text := "version: 1\ngateway:\n  state_dir: " + filepath.Join(dir, "state") + `
backends:
  local:
    command: "true"
  hosted:
    transport: http
    url: http://127.0.0.1:1/mcp
    auth: {client_id: kiln}
  robot:
    transport: http
    url: http://127.0.0.1:1/mcp
    auth: {grant: client_credentials, client_id: kiln, client_secret: "${KILN_TEST_CLI_SECRET}"}
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KILN_TEST_CLI_SECRET", "s3cret-value")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"usage", []string{"auth"}, exitUsage, "login BACKEND"},
		{"status", []string{"auth", "status", "--config", cfg}, exitOK,
			"hosted: needs_login; run: kiln auth login hosted\nrobot: no token yet (client credentials: kiln gets one on first connect)\n"},
		{"login needs a name", []string{"auth", "login", "--config", cfg}, exitUsage, "name one backend"},
		{"login a backend without auth", []string{"auth", "login", "local", "--config", cfg}, exitUsage, `no http or sse backend "local" with an auth: section`},
		{"logout", []string{"auth", "logout", "hosted", "--config", cfg}, exitOK, "logged out of hosted"},
		{"unknown", []string{"auth", "whoami", "--config", cfg}, exitUsage, `unknown command "whoami"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tc.args, strings.NewReader(""), &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Errorf("exit %d (want %d); output:\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			if strings.Contains(out.String()+errOut.String(), "s3cret-value") {
				t.Error("output shows the client secret")
			}
		})
	}
}
