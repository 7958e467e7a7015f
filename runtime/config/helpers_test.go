package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env turns a map into an injected environment lookup.
func env(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// loadYAML loads text as "kiln.yaml" in a fresh folder holding dotenv as its
// .env file (none when ""), with vars as the process environment.
func loadYAML(t *testing.T, text string, vars map[string]string, dotenv string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	if dotenv != "" {
		if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(dotenv), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return LoadBytesWith([]byte(text), "kiln.yaml", dir, LoadOptions{Getenv: env(vars)})
}

// mustLoad is loadYAML that fails the test on error.
func mustLoad(t *testing.T, text string, vars map[string]string) *Config {
	t.Helper()
	cfg, err := loadYAML(t, text, vars, "")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

// expectProblems loads text and compares the problem lines it reports.
func expectProblems(t *testing.T, text string, vars map[string]string, want []string) {
	t.Helper()
	_, err := loadYAML(t, text, vars, "")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("load: got error %v, want *Error", err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func errorsIsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
