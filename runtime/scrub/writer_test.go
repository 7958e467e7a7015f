package scrub

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeAll writes each chunk in turn and flushes.
func writeAll(t *testing.T, lw *LineWriter, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		n, err := lw.Write([]byte(c))
		if err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestWriter(t *testing.T) {
	sc := New(Options{})
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1\nAAAAB3NzaC1yc2EAAAADAQAB\n-----END RSA PRIVATE KEY-----"
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"secret split across writes", []string{"level=info API_KEY=abcd12", "34efgh5678 ok\n"}, "level=info API_KEY=[REDACTED:assignment] ok\n"},
		{"token split mid-prefix", []string{"t=gh", fakeGH[2:20], fakeGH[20:] + "\nnext\n"}, "t=[REDACTED:github-token]\nnext\n"},
		{"several lines in one write", []string{"a " + fakeJWT + "\nb\nc " + fakeGH + "\n"}, "a [REDACTED:jwt]\nb\nc [REDACTED:github-token]\n"},
		{"partial line flushed", []string{"tail " + fakeGH}, "tail [REDACTED:github-token]"},
		{"private key across lines", []string{"before\n" + pem[:40], pem[40:] + " after\nnext\n"}, "before\n[REDACTED:private-key]\n after\nnext\n"},
		{"private key never closed", []string{"x " + pem[:50] + "\nmore key\n"}, "x [REDACTED:private-key]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeAll(t, sc.Writer(&buf), tt.chunks...)
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriterByteByByte(t *testing.T) {
	cases, values := loadPlanted(t)
	sc := New(Options{Values: values})
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.input + "\n")
	}
	var buf bytes.Buffer
	lw := sc.Writer(&buf)
	for _, b := range []byte(in.String()) {
		if _, err := lw.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		for i, secret := range c.secrets {
			if leaked(buf.String(), secret) {
				t.Errorf("%s: leaked %s", c.name, c.wantType[i])
			}
		}
	}
}

func TestWriterLongLine(t *testing.T) {
	sc := New(Options{})
	var buf bytes.Buffer
	lw := sc.Writer(&buf)
	word := strings.Repeat("lorem ", 2000) // 12 KB per write
	for range 10 {
		lw.Write([]byte(word))
		if len(lw.pending) >= maxPending {
			t.Fatalf("pending grew to %d bytes", len(lw.pending))
		}
	}
	lw.Write([]byte(fakeGH + "\n"))
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(word, 10) + "[REDACTED:github-token]\n"
	if got := buf.String(); got != want {
		t.Errorf("long line: got %d bytes, want %d; tail %q", len(got), len(want), got[max(0, len(got)-60):])
	}
}

type failWriter struct{}

var errSink = errors.New("sink full")

func (failWriter) Write([]byte) (int, error) { return 0, errSink }

func TestWriterError(t *testing.T) {
	lw := New(Options{}).Writer(failWriter{})
	if _, err := lw.Write([]byte("line\n")); !errors.Is(err, errSink) {
		t.Errorf("Write error = %v, want %v", err, errSink)
	}
}

func TestWriterNilScrubber(t *testing.T) {
	var sc *Scrubber
	var buf bytes.Buffer
	writeAll(t, sc.Writer(&buf), "a "+fakeGH+"\n", "b")
	if want := "a " + fakeGH + "\nb"; buf.String() != want {
		t.Errorf("nil scrubber writer = %q, want %q", buf.String(), want)
	}
}

func TestWriterSlogJSON(t *testing.T) {
	var buf bytes.Buffer
	lw := New(Options{}).Writer(&buf)
	log := slog.New(slog.NewJSONHandler(lw, nil))
	log.Info("backend exited", "stderr", "fatal: auth\n"+fakeGH, "password", "hunter22", "url", "https://u:pw123456@db/x")
	out := buf.String()
	for _, secret := range []string{fakeGH, "hunter22", "pw123456"} {
		if strings.Contains(out, secret) {
			t.Errorf("slog line leaked %q: %s", secret, out)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("scrubbed slog line is not JSON: %v\n%s", err, out)
	}
	if diff := cmp.Diff("fatal: auth\n[REDACTED:github-token]", rec["stderr"]); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
