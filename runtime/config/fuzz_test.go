package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadBytes checks that no input panics and that every failure is a
// well-formed *Error.
func FuzzLoadBytes(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	dir := f.TempDir()
	vars := env(map[string]string{"A": "a", "TOKEN": "t", "KILN_GATEWAY_CALL_TIMEOUT": "${A}"})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadBytesWith(data, "fuzz.yaml", dir, LoadOptions{Getenv: vars})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("error %v is not a non-empty *Error", err)
			}
			return
		}
		for _, b := range cfg.Backends {
			if !nameRE.MatchString(b.Name) || b.Timeout <= 0 {
				t.Fatalf("accepted backend %+v", b)
			}
		}
	})
}
