package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// TestMain serves the workspace-exec subcommand from the test binary,
// which the package re-executes for Bash as kiln re-executes itself, and
// the reap tests' helper process (reapHelper).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ExecCommand {
		os.Exit(ExecMain(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == reapHelperCommand {
		os.Exit(reapHelper(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// fixture is a workspace over a fresh root, with a folder beside it
// (outside) holding a secret the tests must never see.
type fixture struct {
	t       *testing.T
	w       *Workspace
	root    string
	outside string
	secret  string
}

const secretText = "TOP-SECRET-OUTSIDE-CONTENT"

func newFixture(t *testing.T, edit func(*config.Workspace)) *fixture {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte(secretText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Workspace{Root: root, MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: filepath.Join(base, "state"),
		Bash: config.Bash{Timeout: 20 * time.Second, MaxTimeout: time.Minute}}
	if edit != nil {
		edit(&cfg)
	}
	w, err := Open(&config.Backend{Name: "repo", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &fixture{t: t, w: w, root: w.Root(), outside: outside, secret: secret}
}

// call runs a tool and returns its text and whether it was an error.
func (f *fixture) call(tool string, args any) (string, bool) {
	f.t.Helper()
	return f.callCtx(f.t.Context(), tool, args)
}

func (f *fixture) callCtx(ctx context.Context, tool string, args any) (string, bool) {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	res := f.w.Call(ctx, tool, raw)
	if res == nil {
		f.t.Fatalf("%s returned nil", tool)
	}
	return res.TextContent(), res.IsError
}

// expectOK calls a tool that must succeed and returns its text.
func (f *fixture) expectOK(tool string, args any) string {
	f.t.Helper()
	text, isErr := f.call(tool, args)
	if isErr {
		f.t.Fatalf("%s(%v) failed: %s", tool, args, text)
	}
	return text
}

// expectErr calls a tool that must fail with a message containing want.
func (f *fixture) expectErr(tool string, args any, want string) string {
	f.t.Helper()
	text, isErr := f.call(tool, args)
	if !isErr || !strings.Contains(text, want) {
		f.t.Fatalf("%s(%v) = (%q, isError %v), want an error containing %q", tool, args, text, isErr, want)
	}
	return text
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

var _ = toolcall.Text
