package scrub

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plantedCase is one "### name" block of testdata/planted.txt.
type plantedCase struct {
	name     string
	input    string   // markers replaced by their values
	want     string   // markers replaced by [REDACTED:type]
	secrets  []string // the planted values
	wantType []string
}

var markerRE = regexp.MustCompile(`(?s)⟦([a-zA-Z_:-]+)\|(.*?)⟧`)

// loadPlanted parses testdata/planted.txt and returns its cases and the
// env:NAME values they expect the scrubber to know.
func loadPlanted(t testing.TB) ([]plantedCase, []Value) {
	t.Helper()
	data, err := os.ReadFile("testdata/planted.txt")
	if err != nil {
		t.Fatal(err)
	}
	var cases []plantedCase
	var values []Value
	for _, block := range strings.Split(string(data), "\n### ")[1:] {
		name, body, _ := strings.Cut(block, "\n")
		body = strings.TrimSuffix(body, "\n")
		c := plantedCase{name: name}
		c.input = markerRE.ReplaceAllString(body, "$2")
		c.want = markerRE.ReplaceAllString(body, "[REDACTED:$1]")
		for _, m := range markerRE.FindAllStringSubmatch(body, -1) {
			c.secrets = append(c.secrets, m[2])
			c.wantType = append(c.wantType, m[1])
			if env, ok := strings.CutPrefix(m[1], "env:"); ok {
				values = append(values, Value{Name: env, Value: m[2]})
			}
		}
		cases = append(cases, c)
	}
	return cases, values
}

// leaked reports whether out still shows secret: the whole value, or any
// line of a multi-line one (a PEM body) that is long enough to matter.
func leaked(out, secret string) bool {
	if strings.Contains(out, secret) {
		return true
	}
	for _, line := range strings.Split(secret, "\n") {
		if line = strings.TrimSpace(line); len(line) >= 16 && strings.Contains(out, line) {
			return true
		}
	}
	return false
}

func TestPlantedCorpus(t *testing.T) {
	cases, values := loadPlanted(t)
	sc := New(Options{Values: values})
	total, caught := 0, 0
	var misses []string
	types := map[string]int{}
	for _, c := range cases {
		out := sc.String(c.input)
		for i, secret := range c.secrets {
			total++
			types[c.wantType[i]]++
			if leaked(out, secret) {
				misses = append(misses, c.name+": "+c.wantType[i])
				continue
			}
			caught++
		}
		if diff := cmp.Diff(c.want, out); diff != "" {
			t.Errorf("%s: String (-want +got):\n%s", c.name, diff)
		}
		if json.Valid([]byte(c.input)) {
			if diff := cmp.Diff(c.want, string(sc.JSON([]byte(c.input)))); diff != "" {
				t.Errorf("%s: JSON (-want +got):\n%s", c.name, diff)
			}
		}
		var buf bytes.Buffer
		lw := sc.Writer(&buf)
		lw.Write([]byte(c.input + "\n"))
		for i, secret := range c.secrets {
			if leaked(buf.String(), secret) {
				t.Errorf("%s: Writer leaked %s: %q", c.name, c.wantType[i], buf.String())
			}
		}
	}
	t.Logf("planted: %d/%d redacted (%.1f%%) across %d types: %v", caught, total, 100*float64(caught)/float64(total), len(types), types)
	if total < 60 {
		t.Errorf("corpus has %d planted secrets, want at least 60", total)
	}
	if len(misses) > 0 {
		t.Errorf("missed %d planted secrets:\n%s", len(misses), strings.Join(misses, "\n"))
	}
}

// maxFalsePositiveRate bounds how many look-alikes and benign blocks may
// be redacted. A redacted look-alike costs the reader a hash or a name,
// while a missed secret leaks it, so the rules lean towards redacting; 2%
// of a corpus built to resemble secrets is two cases, and the real-world
// rate on ordinary results is far lower (the clean benchmark inputs redact
// nothing).
const maxFalsePositiveRate = 0.02

// benignCases returns the cases that must come out unchanged: each line of
// testdata/lookalikes.txt and each "### name" block of testdata/benign.txt.
func benignCases(t testing.TB) (names, texts []string) {
	t.Helper()
	data, err := os.ReadFile("testdata/lookalikes.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names, texts = append(names, line), append(texts, line)
	}
	data, err = os.ReadFile("testdata/benign.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(data), "\n### ")[1:] {
		name, body, _ := strings.Cut(block, "\n")
		names, texts = append(names, name), append(texts, strings.TrimSuffix(body, "\n"))
	}
	return names, texts
}

// falsePositives runs every benign case through String and, for JSON
// documents, JSON, and returns the outputs that differ from their input.
func falsePositives(t testing.TB, sc *Scrubber) (hits []string, total int) {
	names, texts := benignCases(t)
	for i, text := range texts {
		out := sc.String(text)
		if json.Valid([]byte(text)) {
			if got := string(sc.JSON([]byte(text))); got != text && out == text {
				out = got
			}
		}
		if out != text {
			hits = append(hits, names[i]+": "+out)
		}
	}
	return hits, len(texts)
}

func TestLookalikeCorpus(t *testing.T) {
	hits, total := falsePositives(t, New(Options{}))
	rate := float64(len(hits)) / float64(total)
	t.Logf("false positives: %d/%d benign cases redacted (%.1f%%)", len(hits), total, 100*rate)
	for _, h := range hits {
		t.Logf("  hit: %s", h)
	}
	if total < 130 {
		t.Errorf("corpus has %d benign cases, want at least 130", total)
	}
	if rate > maxFalsePositiveRate {
		t.Errorf("false-positive rate %.1f%% above %.0f%%", 100*rate, 100*maxFalsePositiveRate)
	}
}
