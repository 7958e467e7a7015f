package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// The test binary doubles as a real MCP stdio server (mcp-go) when
// KILN_TEST_SERVER is set; KILN_TEST_EXTRA=1 adds a tool, to make drift.
func init() {
	switch os.Getenv("KILN_TEST_SERVER") {
	case "":
		return
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: cannot open database")
		os.Exit(3)
	}
	s := server.NewMCPServer("cli-test", "0.1.0", server.WithToolCapabilities(false))
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("lookup", mcp.WithDescription("Looks a word up."), mcp.WithString("word", mcp.Required())), handler)
	if os.Getenv("KILN_TEST_EXTRA") == "1" {
		s.AddTool(mcp.NewTool("define", mcp.WithDescription("Defines a word."), mcp.WithString("word", mcp.Required())), handler)
	}
	if err := server.ServeStdio(s); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func writeConfig(t *testing.T, dir string, backends map[string]string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("version: 1\ngateway:\n  connect_timeout: 20s\nbackends:\n")
	for name, mode := range backends {
		fmt.Fprintf(&b, "  %s:\n    transport: stdio\n    command: %q\n    env:\n      KILN_TEST_SERVER: %s\n      KILN_TEST_EXTRA: ${KILN_TEST_EXTRA:-0}\n", name, exe, mode)
	}
	path := filepath.Join(dir, "kiln.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), args, nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRecordEmitDiff(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, map[string]string{"words": "serve", "broken": "crash"})
	manifests := filepath.Join(dir, "manifests")

	code, out, errOut := run(t, "record", "--config", cfg, "--manifests", manifests)
	if code != exitFail {
		t.Fatalf("record with a crashing backend: exit %d, want %d\n%s%s", code, exitFail, out, errOut)
	}
	for _, want := range []string{"✓ words: connected (cli-test 0.1.0", "1 tool", "✗ broken: failed", "cannot open database"} {
		if !strings.Contains(out, want) {
			t.Errorf("record progress lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "broken") {
		t.Errorf("record error does not name the failed backend: %s", errOut)
	}
	first, err := os.ReadFile(filepath.Join(manifests, "words.json"))
	if err != nil {
		t.Fatalf("the healthy backend was not recorded: %v", err)
	}

	// Recording the same backend again yields the same bytes.
	cfg = writeConfig(t, dir, map[string]string{"words": "serve"})
	if code, out, errOut := run(t, "record", "--config", cfg, "--manifests", manifests); code != exitOK {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	second, _ := os.ReadFile(filepath.Join(manifests, "words.json"))
	if !bytes.Equal(first, second) {
		t.Errorf("recording twice changed the manifest:\n%s\n%s", first, second)
	}

	if code, out, errOut := run(t, "emit", "--manifests", manifests, "--out", filepath.Join(dir, "generated")); code != exitOK {
		t.Fatalf("emit: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "generated", "words", "words.gen.go")); err != nil {
		t.Errorf("emit did not write the backend's package: %v", err)
	}

	if code, out, errOut := run(t, "diff", "--config", cfg, "--manifests", manifests); code != exitOK || !strings.Contains(out, "no drift") {
		t.Errorf("diff without drift: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("KILN_TEST_EXTRA", "1")
	code, out, errOut = run(t, "diff", "--config", cfg, "--manifests", manifests)
	if code != exitFail || !strings.Contains(out, "define") || !strings.Contains(out, "make generate") {
		t.Errorf("diff with a new tool: exit %d, want %d\n%s%s", code, exitFail, out, errOut)
	}
	// The reviewer is told what a running kiln holds back meanwhile
	// (drift: pin by default).
	if !strings.Contains(out, "words (drift: pin, from the default): held back pending review") ||
		!strings.Contains(out, "new: not listed, searchable or callable") {
		t.Errorf("diff does not say what pin holds back:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: kiln-gen"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"record", "--config", "/nonexistent/kiln.yaml"}, exitUsage, "/nonexistent/kiln.yaml"},
		{[]string{"eval", "--tools", "x"}, exitUsage, "--queries"},
		{[]string{"emit", "--manifests", "/nonexistent"}, exitFail, "stat /nonexistent: no such file or directory; run `kiln-gen record` first"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if len(args) > 0 && args[0] == "emit" {
				args = append(args, "--out", t.TempDir())
			}
			code, out, errOut := run(t, args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d), output:\n%s%s", code, tc.code, out, errOut)
			}
		})
	}
	if code, out, _ := run(t, "--version"); code != exitOK || !strings.HasPrefix(out, "kiln-gen ") {
		t.Errorf("--version: %d %q", code, out)
	}
}

// TestRecordPrunesOnlyWhenAsked: a config that does not declare a
// committed manifest's backend keeps that manifest and says so; --prune
// deletes it.
func TestRecordPrunesOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	full := writeConfig(t, dir, map[string]string{"words": "serve", "other": "serve"})
	if code, out, errOut := run(t, "record", "--config", full, "--manifests", manifests); code != exitOK {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	other := filepath.Join(manifests, "other.json")

	partial := writeConfig(t, t.TempDir(), map[string]string{"words": "serve"})
	code, out, errOut := run(t, "record", "--config", partial, "--manifests", manifests)
	if code != exitOK {
		t.Fatalf("record without --prune: exit %d\n%s%s", code, out, errOut)
	}
	if want := "- other: kept " + other + ", which " + partial + " does not declare (pass --prune to delete it)"; !strings.Contains(out, want) {
		t.Errorf("record without --prune does not list the undeclared manifest; want %q in:\n%s", want, out)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("record without --prune deleted %s: %v", other, err)
	}

	code, out, errOut = run(t, "record", "--config", partial, "--manifests", manifests, "--prune")
	if code != exitOK || !strings.Contains(out, "- other: removed "+other) {
		t.Errorf("record --prune: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("record --prune kept %s: %v", other, err)
	}
	if _, err := os.Stat(filepath.Join(manifests, "words.json")); err != nil {
		t.Errorf("record --prune deleted a declared backend's manifest: %v", err)
	}
}

// TestEmitRepairsAnInterruptedEmit: what a killed emit leaves beside
// generated/ (a half-built work folder, or the previous tree moved aside
// between the two renames of the portable swap) is cleaned up by the next
// emit, which writes the whole tree.
func TestEmitRepairsAnInterruptedEmit(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	cfg := writeConfig(t, dir, map[string]string{"words": "serve"})
	if code, out, errOut := run(t, "record", "--config", cfg, "--manifests", manifests); code != exitOK {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	out := filepath.Join(dir, "generated")
	if code, stdout, errOut := run(t, "emit", "--manifests", manifests, "--out", out); code != exitOK {
		t.Fatalf("emit: exit %d\n%s%s", code, stdout, errOut)
	}
	want, err := os.ReadFile(filepath.Join(out, "words", "words.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	// A kill between the renames: the tree moved aside, a half tree built.
	if err := os.Rename(out, filepath.Join(dir, ".generated.emit-old")); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, ".generated.emit-tmp", "words")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(half, ".words.gen.go.tmp123"), []byte("package wo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := run(t, "emit", "--manifests", manifests, "--out", out); code != exitOK {
		t.Fatalf("emit after an interrupted emit: exit %d\n%s%s", code, stdout, errOut)
	}
	got, err := os.ReadFile(filepath.Join(out, "words", "words.gen.go"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("words.gen.go after repair: %v\n%s", err, got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".generated.") {
			t.Errorf("emit left %s beside generated/", e.Name())
		}
	}
}

// TestEmitWarnsAboutContestedURIs: two manifests listing one resource
// emit fine, with a warning naming the backend whose reads win.
func TestEmitWarnsAboutContestedURIs(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alpha", "beta"} {
		m := &manifest.Manifest{Version: manifest.Version, Backend: name, Transport: "stdio",
			Resources: []manifest.Resource{{URI: "shared://readme", Name: "readme"}}}
		if _, err := manifest.WriteFile(manifests, m); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := run(t, "emit", "--manifests", manifests, "--out", filepath.Join(dir, "generated"))
	if code != exitOK {
		t.Fatalf("emit exited %d: %s", code, errOut)
	}
	want := `kiln-gen emit: warning: resource "shared://readme" is claimed by backends "alpha" and "beta"; reads go to "alpha", declared first`
	if !strings.Contains(errOut, want) {
		t.Errorf("emit stderr = %q, want it to contain %q", errOut, want)
	}
}
