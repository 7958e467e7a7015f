package workspace

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutsKeepCharacters: a shell's command in listings and a capped
// output never end or start inside a UTF-8 character.
func TestCutsKeepCharacters(t *testing.T) {
	cmd := strings.Repeat("a", 59) + "日本語"
	if got := cut(cmd, 60); got != strings.Repeat("a", 59)+"…" {
		t.Errorf("cut = %q", got)
	}
	out := strings.Repeat("日", 1000)
	got := capText(out, 100)
	if !utf8.ValidString(got) {
		t.Fatalf("capText split a character: %q", got)
	}
	head, rest, ok := strings.Cut(got, "\n[… ")
	if !ok || head != strings.Repeat("日", 22) || !strings.HasSuffix(rest, "…]\n"+strings.Repeat("日", 11)) {
		t.Errorf("capText = %q", got)
	}
	if want := "2901 bytes cut"; !strings.Contains(rest, want) {
		t.Errorf("capText = %q, want %q", got, want)
	}
}
