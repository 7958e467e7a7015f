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
	if !ok || head != strings.Repeat("日", 11) || !strings.HasSuffix(rest, "…]\n"+strings.Repeat("日", 5)) {
		t.Errorf("capText = %q", got)
	}
	if want := "2952 bytes cut"; !strings.Contains(rest, want) {
		t.Errorf("capText = %q, want %q", got, want)
	}
}

// TestGrepLineCutKeepsCharacters: Grep's content mode shortens a long
// line at readLineCut bytes, which here falls inside 日; the line must
// end before that character, not in the middle of it (the model got a
// replacement character). Read cuts the same line the same way.
func TestGrepLineCutKeepsCharacters(t *testing.T) {
	f := newFixture(t, nil)
	head := "needle" + strings.Repeat("a", readLineCut-7)
	f.write("long.txt", head+strings.Repeat("日", 10)+"\n")
	got := f.expectOK("Grep", map[string]any{"pattern": "needle", "output_mode": "content", "path": "long.txt"})
	if !utf8.ValidString(got) {
		t.Fatalf("Grep cut a character: %q", got[len(got)-20:])
	}
	if want := f.root + "/long.txt:1:" + head + "… [line cut]"; got != want {
		t.Errorf("Grep = …%q, want …%q", got[max(0, len(got)-20):], want[len(want)-20:])
	}
	if got, want := f.expectOK("Read", map[string]any{"file_path": "long.txt"}), "     1\t"+head+"… [line cut]\n"; got != want {
		t.Errorf("Read = …%q, want …%q", got[max(0, len(got)-20):], want[len(want)-20:])
	}
}
