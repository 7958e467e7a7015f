package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	family := "👩\u200d👩\u200d👧" // 4+3+4+3+4 bytes
	cases := []struct {
		name          string
		s             string
		n             int
		before, after int
	}{
		{"ascii", "abcdef", 3, 3, 3},
		{"inside a rune", "aé", 2, 1, 3},
		{"before a combining mark", "e\u0301x", 1, 0, 3},
		{"inside a ZWJ sequence", "a" + family + "b", 5, 1, 1 + len(family)},
		{"after a ZWJ", "a" + family + "b", 9, 1, 1 + len(family)},
		{"between flags", "🇯🇵🇫🇷", 8, 8, 8},
		{"inside a flag", "🇯🇵🇫🇷", 4, 0, 8},
		{"inside the second flag", "x🇯🇵🇫🇷", 13, 9, 17},
		{"skin tone", "👍🏽!", 4, 0, 8},
		{"CRLF", "a\r\nb", 2, 1, 3},
		{"variation selector", "☺\ufe0fx", 3, 0, 6},
		{"past the end", "ab", 5, 2, 2},
		{"negative", "ab", -1, 0, 0},
		{"invalid bytes", "\xff\xfe\x80\x80", 2, 1, 4},
	}
	for _, c := range cases {
		if got := Before(c.s, c.n); got != c.before {
			t.Errorf("%s: Before(%q, %d) = %d, want %d", c.name, c.s, c.n, got, c.before)
		}
		if got := After(c.s, c.n); got != c.after {
			t.Errorf("%s: After(%q, %d) = %d, want %d", c.name, c.s, c.n, got, c.after)
		}
	}
	// A cluster longer than maxBackoff falls back to a rune boundary.
	marks := "a" + strings.Repeat("\u0301", 200)
	if got := Before(marks, 301); got != 301 {
		t.Errorf("long cluster: cutBefore = %d, want 301", got)
	}
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"},
		{"日本", 4, "日"},
		{"日本", 3, "日"},
		{"日本", 2, ""},
		{"👩x", 3, ""},
		{"ab", 0, ""},
		{"ab", -1, ""},
		{"\x80\x80\x80", 2, ""},
	} {
		got := Prefix(c.s, c.n)
		if got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if utf8.ValidString(c.s) && !utf8.ValidString(got) {
			t.Errorf("Prefix(%q, %d) = %q splits a rune", c.s, c.n, got)
		}
	}
}

func TestSuffix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "bc"},
		{"éa", 2, "a"},
		{"日本", 4, "本"},
		{"日本", 2, ""},
		{"x👩", 3, ""},
		{"ab", 0, ""},
		{"ab", -1, ""},
	} {
		got := Suffix(c.s, c.n)
		if got != c.want {
			t.Errorf("Suffix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if !strings.HasSuffix(c.s, got) || !utf8.ValidString(got) {
			t.Errorf("Suffix(%q, %d) = %q is no whole suffix", c.s, c.n, got)
		}
	}
}

func BenchmarkCut(b *testing.B) {
	s := strings.Repeat("日本語 e\u0301 👩\u200d👩\u200d👧 🇯🇵 ", 100)
	b.ReportAllocs()
	for b.Loop() {
		for n := 1; n < len(s); n += 97 {
			_ = Prefix(s, n)
			_ = Before(s, n)
			_ = After(s, n)
		}
	}
}
