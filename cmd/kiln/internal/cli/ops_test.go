package cli

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpsStartErrors: a metrics listener that cannot bind and a trace
// exporter kiln cannot use stop kiln at start, naming the key or variable.
func TestOpsStartErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := filepath.Join(t.TempDir(), "kiln.yaml")
	text := fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  metrics_addr: %s\n", t.TempDir(), taken.Addr())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(t.Context(), []string{"serve", "--config", cfg}, strings.NewReader(""), &out, &errOut)
	if want := "gateway.metrics_addr " + taken.Addr().String(); code != exitUsage || !strings.Contains(errOut.String(), want) {
		t.Errorf("metrics_addr taken: exit %d (want %d), stderr lacks %q:\n%s", code, exitUsage, want, errOut.String())
	}

	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	errOut.Reset()
	text = fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n", t.TempDir())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code = Run(t.Context(), []string{"serve", "--config", cfg}, strings.NewReader(""), &out, &errOut)
	if want := `OTEL_TRACES_EXPORTER="zipkin"`; code != exitUsage || !strings.Contains(errOut.String(), want) {
		t.Errorf("bad exporter: exit %d (want %d), stderr lacks %q:\n%s", code, exitUsage, want, errOut.String())
	}
}
