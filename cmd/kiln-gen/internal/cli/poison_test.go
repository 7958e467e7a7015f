package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPoisonReview: a backend whose description turns into issue 27's rug
// pull is reported as SUSPICIOUS by diff, record and emit, with the growth
// since the recorded manifest; emit --strict (and record --strict) fail
// naming the finding and the accept_findings fix and leave generated/
// alone; the accepted findings pass --strict.
func TestPoisonReview(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, map[string]string{"words": "serve"})
	manifests := filepath.Join(dir, "manifests")
	gen := filepath.Join(dir, "generated")
	if code, out, errOut := run(t, "record", "--config", cfg, "--manifests", manifests); code != exitOK || strings.Contains(out, "SUSPICIOUS") {
		t.Fatalf("clean record: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "emit", "--strict", "--accept-config", cfg, "--manifests", manifests, "--out", gen); code != exitOK || strings.Contains(out, "SUSPICIOUS") {
		t.Fatalf("clean emit --strict: exit %d\n%s%s", code, out, errOut)
	}

	t.Setenv("KILN_TEST_POISON", "1")
	wantLines := []string{
		"SUSPICIOUS words.lookup description: markup that fakes authority",
		"SUSPICIOUS words.lookup description: names a credential or key file",
		"SUSPICIOUS words.lookup description: asks the model to keep something from the user",
	}
	growth := "SUSPICIOUS words.lookup description: the description grew sharply"
	code, out, errOut := run(t, "diff", "--config", cfg, "--manifests", manifests)
	if code != exitFail {
		t.Errorf("diff: exit %d, want %d", code, exitFail)
	}
	for _, w := range append(wantLines, growth) {
		if !strings.Contains(out, w) {
			t.Errorf("diff lacks %q:\n%s%s", w, out, errOut)
		}
	}

	code, out, errOut = run(t, "record", "--strict", "--config", cfg, "--manifests", manifests)
	if code != exitFail || !strings.Contains(errOut, "record --strict") {
		t.Errorf("record --strict: exit %d, want %d\n%s", code, exitFail, errOut)
	}
	for _, w := range append(wantLines, growth) {
		if !strings.Contains(out, w) {
			t.Errorf("record lacks %q:\n%s", w, out)
		}
	}
	if m, _ := os.ReadFile(filepath.Join(manifests, "words.json")); !strings.Contains(string(m), "id_rsa") {
		t.Error("record --strict did not write the manifest for review")
	}

	// emit: printed without --strict, fatal with it (and nothing emitted).
	before, _ := os.ReadFile(filepath.Join(gen, "words", "words.gen.go"))
	code, out, errOut = run(t, "emit", "--manifests", manifests, "--out", filepath.Join(dir, "loose"), "--accept-config", cfg)
	if code != exitOK || !strings.Contains(out, wantLines[0]) {
		t.Errorf("emit: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "emit", "--strict", "--accept-config", cfg, "--manifests", manifests, "--out", gen)
	if code != exitFail {
		t.Errorf("emit --strict: exit %d, want %d", code, exitFail)
	}
	for _, w := range append(wantLines, "hidden-instruction-markup") {
		if !strings.Contains(out, w) {
			t.Errorf("emit --strict lacks %q:\n%s", w, out)
		}
	}
	for _, w := range []string{"words.lookup (hidden-instruction-markup)", "accept_findings: [credential-path@lookup]", "fix or drop that backend"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("emit --strict's message lacks %q:\n%s", w, errOut)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(gen, "words", "words.gen.go")); string(after) != string(before) {
		t.Error("emit --strict changed generated/ despite failing")
	}

	// A reviewer accepts every finding but one: still failing, naming it;
	// then all of them, plus a stale entry: passing, stale one reported.
	accept := func(entries string) {
		raw, _ := os.ReadFile(cfg)
		base, _, _ := strings.Cut(string(raw), "    accept_findings:")
		if err := os.WriteFile(cfg, []byte(base+"    accept_findings: ["+entries+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	accept("hidden-instruction-markup@lookup, credential-path@lookup, hide-from-user@lookup")
	code, out, errOut = run(t, "emit", "--strict", "--accept-config", cfg, "--manifests", manifests, "--out", gen)
	if code != exitFail || !strings.Contains(errOut, "words.lookup (pass-contents)") || strings.Contains(errOut, "(credential-path)") {
		t.Errorf("emit --strict with three accepted: exit %d\n%s%s", code, out, errOut)
	}
	accept("hidden-instruction-markup@lookup, credential-path@lookup, hide-from-user@lookup, pass-contents@lookup, zero-width@define")
	code, out, errOut = run(t, "emit", "--strict", "--accept-config", cfg, "--manifests", manifests, "--out", gen)
	if code != exitOK || strings.Contains(out, "SUSPICIOUS") ||
		!strings.Contains(out, "accepted words.lookup description: credential-path@lookup (backends.words.accept_findings)") ||
		!strings.Contains(out, "stale backends.words.accept_findings entry zero-width@define") {
		t.Errorf("emit --strict with all accepted: exit %d\n%s%s", code, out, errOut)
	}
}

// TestHomoglyphAcrossBackends: a second backend publishing "lооkup" with
// Cyrillic о is reported on record as imitating the first's lookup.
func TestHomoglyphAcrossBackends(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, map[string]string{"words": "serve", "evil": "homoglyph"})
	manifests := filepath.Join(dir, "manifests")
	code, out, errOut := run(t, "record", "--strict", "--config", cfg, "--manifests", manifests)
	if code != exitFail {
		t.Errorf("record --strict: exit %d, want %d", code, exitFail)
	}
	want := `SUSPICIOUS evil.lооkup name: the tool's name differs from another tool's`
	if !strings.Contains(out, want) || !strings.Contains(out, `"l\u043e\u043ekup" looks like words.lookup`) {
		t.Errorf("record lacks %q:\n%s%s", want, out, errOut)
	}
	if strings.Contains(out, "SUSPICIOUS words.") {
		t.Errorf("the original was flagged too:\n%s", out)
	}
}
