package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAuditKeys(t *testing.T) {
	dir := t.TempDir()
	cfg, err := LoadBytes([]byte("version: 1\ngateway:\n  audit:\n    path: logs/audit.jsonl\n    max_size: 1MiB\n    keep: 2\n    flush: 1s\n    values: true\n"), "kiln.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Audit{Path: filepath.Join(dir, "logs/audit.jsonl"), MaxSize: 1 << 20, Keep: 2, Flush: time.Second, Values: true}
	if cfg.Gateway.Audit != want {
		t.Errorf("audit = %+v, want %+v", cfg.Gateway.Audit, want)
	}
	cfg, err = LoadBytes([]byte("version: 1\n"), "kiln.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Gateway.Audit; a.Path != "" || a.MaxSize != 100<<20 || a.Keep != 5 || a.Flush != 200*time.Millisecond || a.Values {
		t.Errorf("defaults = %+v", a)
	}
	for in, msg := range map[string]string{
		"max_size: 1KiB": "gateway.audit.max_size",
		"keep: 0":        "gateway.audit.keep",
		"flush: 1ms":     "gateway.audit.flush",
		"values: maybe":  "gateway.audit.values",
	} {
		_, err := LoadBytes([]byte("version: 1\ngateway:\n  audit:\n    "+in+"\n"), "kiln.yaml", dir)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error naming %s", in, err, msg)
		}
	}
}
