package scrub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// Variants of the planted corpus: every planted secret re-encoded the ways
// that hide a shape from a matcher (URL-encoded, split by invisible
// characters, \u-escaped, HTML-escaped), every case inside the forms a
// backend's stderr tail takes on its way out of kiln (an error's "last
// stderr lines", that error quoted in a log line, kiln://backend/NAME's
// JSON), and every private key cut at either end or in the middle.

// invisibles are the characters zeroWidth cycles through.
var invisibles = []string{"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}

// encoders hide a secret's shape. Each re-encodes the characters tokens
// are split on ('_', '-', '+', '/', '=', newlines and spaces), or a middle
// character when there is none.
var encoders = []struct {
	name string
	enc  func(string) string
}{
	{"url-encoded", func(v string) string { return encodeSome(v, func(c byte) string { return fmt.Sprintf("%%%02X", c) }) }},
	{"unicode-escaped", func(v string) string { return encodeSome(v, func(c byte) string { return fmt.Sprintf(`\u%04x`, c) }) }},
	{"html-escaped", func(v string) string { return encodeSome(v, func(c byte) string { return fmt.Sprintf("&#%d;", c) }) }},
	{"zero-width split", func(v string) string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			b.WriteByte(v[i])
			if i%5 == 2 && i < len(v)-1 && v[i] != '\n' && v[i+1] != '\n' {
				b.WriteString(invisibles[(i/5)%len(invisibles)])
			}
		}
		return b.String()
	}},
}

func encodeSome(v string, enc func(byte) string) string {
	var b strings.Builder
	hit := false
	for i := 0; i < len(v); i++ {
		if c := v[i]; strings.IndexByte("_-+/=\n :.", c) >= 0 {
			b.WriteString(enc(c))
			hit = true
			continue
		}
		b.WriteByte(v[i])
	}
	if hit {
		return b.String()
	}
	m := len(v) / 2
	return v[:m] + enc(v[m]) + v[m+1:]
}

// tailForms render text as the stderr tail reaches readers.
var tailForms = []struct {
	name string
	form func(string) string
}{
	{"as is", func(s string) string { return s }},
	{"error tail", errTail},
	{"log line", func(s string) string {
		return `time=2026-03-14T09:12:44Z level=WARN msg="backend exited" backend=keys err=` + strconv.Quote(errTail(s)) + " retry=1s"
	}},
	{"backend resource", func(s string) string {
		b, _ := json.MarshalIndent(map[string]any{"name": "keys", "state": "unhealthy", "stderr_tail": strings.Split(s, "\n")}, "", " ")
		return string(b)
	}},
}

// errTail renders s as backend.Conn.WithStderr does.
func errTail(s string) string {
	return "backend \"keys\": initialize: EOF\n  last stderr lines:\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// variant is one text with the secrets it hides.
type variant struct {
	name    string
	text    string
	secrets []string
}

// variants builds the variant corpus from the planted cases.
func variants(t testing.TB) []variant {
	cases, _ := loadPlanted(t)
	var out []variant
	for _, c := range cases {
		for _, e := range encoders {
			text := c.input
			for _, s := range c.secrets {
				text = strings.Replace(text, s, e.enc(s), 1)
			}
			out = append(out, variant{c.name + " / " + e.name, text, c.secrets})
		}
		if strings.Contains(c.input, "\\n") {
			continue // already escaped once; the tail forms assume raw lines
		}
		for _, f := range tailForms[1:] {
			out = append(out, variant{c.name + " / " + f.name, f.form(c.input), c.secrets})
		}
		for i, s := range c.secrets {
			if c.wantType[i] == "private-key" {
				out = append(out, keyCuts(c.name, s)...)
			}
		}
	}
	return out
}

// keyCuts cuts a planted private key every way a tail or a truncation
// does, in every tail form.
func keyCuts(name, key string) []variant {
	lines := strings.Split(key, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "-----BEGIN ") || !strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "-----END ") {
		return nil // a planted cut already
	}
	body := lines[1 : len(lines)-1]
	secret := strings.Join(body, "\n")
	var texts []struct{ name, text string }
	add := func(n, s string) { texts = append(texts, struct{ name, text string }{n, s}) }
	for k := 1; k <= len(body); k++ {
		add(fmt.Sprintf("last %d body lines and END", k), strings.Join(lines[len(lines)-1-k:], "\n"))
		add(fmt.Sprintf("BEGIN and first %d body lines", k), strings.Join(lines[:1+k], "\n"))
	}
	first := strings.TrimSpace(body[0])
	add("tail cut mid-line", first[len(first)/2:]+"\n"+strings.Join(lines[2:], "\n"))
	if len(body) >= minBodyRun {
		add("body only", strings.Join(body, "\n"))
	}
	var out []variant
	for _, tx := range texts {
		for _, f := range tailForms {
			out = append(out, variant{name + " / " + tx.name + " / " + f.name, "stderr: starting\n" + tx.text, []string{secret}})
		}
	}
	return out
}

var (
	pctRE  = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
	uescRE = regexp.MustCompile(`\\+u([0-9A-Fa-f]{4})`)
)

// normalize undoes every encoding in out, so that a secret counts as
// leaked when a reader could still recover it.
func normalize(out string) string {
	for range 2 {
		out = pctRE.ReplaceAllStringFunc(out, func(m string) string {
			v, _ := strconv.ParseUint(m[1:], 16, 8)
			return string(rune(v))
		})
	}
	out = uescRE.ReplaceAllStringFunc(out, func(m string) string {
		v, _ := strconv.ParseUint(m[len(m)-4:], 16, 32)
		return string(rune(v))
	})
	out = html.UnescapeString(out)
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, out)
}

// exposed reports whether out shows any of secret: the whole of a short
// one, or any 20-byte stretch of a line of a long one (a PEM body line),
// after normalize. Marker lines are not secret.
func exposed(out, secret string) bool {
	n := normalize(out)
	for _, line := range strings.Split(secret, "\n") {
		line = strings.Trim(strings.TrimSpace(line), `"\`)
		if strings.HasPrefix(line, "-----") || line == "" {
			continue
		}
		if len(line) < 20 {
			if strings.Contains(n, line) {
				return true
			}
			continue
		}
		for i := 0; i+20 <= len(line); i++ {
			if strings.Contains(n, line[i:i+20]) {
				return true
			}
		}
	}
	return false
}

func TestVariantCorpus(t *testing.T) {
	_, values := loadPlanted(t)
	sc := New(Options{Values: values})
	vs := variants(t)
	total, caught := 0, 0
	var misses []string
	for _, v := range vs {
		outs := map[string]string{"String": sc.String(v.text)}
		if json.Valid([]byte(v.text)) {
			got := sc.JSON([]byte(v.text))
			if !json.Valid(got) {
				t.Errorf("%s: JSON output is not JSON: %s", v.name, got)
			}
			outs["JSON"] = string(got)
		}
		var buf bytes.Buffer
		lw := sc.Writer(&buf)
		lw.Write([]byte(v.text + "\n"))
		lw.Flush()
		outs["Writer"] = buf.String()
		for how, out := range outs {
			for _, s := range v.secrets {
				total++
				if exposed(out, s) {
					misses = append(misses, fmt.Sprintf("%s (%s):\n%s", v.name, how, out))
					continue
				}
				caught++
			}
		}
	}
	t.Logf("variants: %d/%d planted secrets redacted (%.1f%%) in %d texts", caught, total, 100*float64(caught)/float64(total), len(vs))
	if len(vs) < 500 {
		t.Errorf("variant corpus has %d texts, want at least 500", len(vs))
	}
	if len(misses) > 0 {
		t.Errorf("missed %d planted secrets; first ones:\n%s", len(misses), strings.Join(misses[:min(len(misses), 10)], "\n"))
	}
}
