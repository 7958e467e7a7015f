package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without namespaces bash is forked by workspace-exec instead of exec'd
// (supervise): it must still inherit the Landlock domain of the thread
// restrict bound, or the fallback would run commands unconfined.
func TestFallbackCommandsStayConfined(t *testing.T) {
	if kernelABI() < 1 {
		t.Skip("the kernel has no Landlock")
	}
	f := newFixture(t, nil)
	f.w.confine.noNamespaces.Store(true)
	for _, cmd := range []string{
		"cat " + f.secret,
		"echo x > " + filepath.Join(f.outside, "made.txt"),
	} {
		text, _ := f.call("Bash", map[string]any{"command": cmd})
		if strings.Contains(text, secretText) || strings.HasSuffix(text, "exit code: 0") {
			t.Errorf("Bash %q got out: %s", cmd, text)
		}
	}
	if _, err := os.Stat(filepath.Join(f.outside, "made.txt")); err == nil {
		t.Error("a file was made outside the root")
	}
	// And it still runs what it may.
	if text := f.expectOK("Bash", map[string]any{"command": "echo inside > in.txt && cat in.txt"}); !strings.Contains(text, "inside") {
		t.Errorf("Bash inside the root = %q", text)
	}
}

// Exit statuses pass through workspace-exec unchanged: a plain code, and
// 128+n for a command killed by signal n.
func TestFallbackExitStatus(t *testing.T) {
	f := newFixture(t, nil)
	f.w.confine.noNamespaces.Store(true)
	for cmd, want := range map[string]string{
		"exit 3":        "exit code: 3",
		"kill -TERM $$": "exit code: 143",
		"true":          "exit code: 0",
	} {
		text, _ := f.call("Bash", map[string]any{"command": cmd})
		if !strings.HasSuffix(text, want) {
			t.Errorf("Bash %q = %q, want it to end %q", cmd, text, want)
		}
	}
}
