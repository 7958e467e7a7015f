package workspace

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// mermaidPath puts the pinned mmdc (make mermaid) on PATH, or skips when
// it or chromium is missing; under CI=true that fails instead.
func mermaidPath(t testing.TB) {
	t.Helper()
	bin, _ := filepath.Abs("../../tests/mermaid/node_modules/.bin")
	_, errM := os.Stat(filepath.Join(bin, "mmdc"))
	_, errC := exec.LookPath("chromium")
	if errM != nil || errC != nil {
		msg := "render_mermaid needs make mermaid (tests/mermaid/node_modules/.bin/mmdc) and apt-get install chromium"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
}

const diagram = "graph TD\n  A[Start] --> B{Ok?}\n  B -->|yes| C[Done]\n"

// TestRenderMermaid: a real SVG and PNG, confined like Bash; each field
// changes the result; a missing mmdc is refused with the install command.
func TestRenderMermaid(t *testing.T) {
	mermaidPath(t)
	f := newFixture(t, nil)
	got := f.expectOK("render_mermaid", map[string]any{"source": diagram})
	if !strings.HasPrefix(got, "<svg") || !strings.Contains(got, "Start") || strings.Contains(got, "SIL OPEN FONT LICENSE") {
		t.Errorf("inline SVG = %.200s", got)
	}
	// format: png comes back as image content.
	res := f.w.Call(t.Context(), "render_mermaid", json.RawMessage(`{"source":"graph LR; X-->Y","format":"png"}`))
	var block struct{ Type, Data, MimeType string }
	if res.IsError || len(res.Content) != 1 || json.Unmarshal(res.Content[0], &block) != nil || block.Type != "image" || block.MimeType != "image/png" {
		t.Fatalf("png = %v %s", res.IsError, res.TextContent())
	}
	if png, _ := base64.StdEncoding.DecodeString(block.Data); !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("png lacks the PNG magic: %q", png[:min(8, len(png))])
	}
	// output_path writes into the workspace, fonts embedded.
	got = f.expectOK("render_mermaid", map[string]any{"source": diagram, "output_path": "docs/flow.svg"})
	if !strings.Contains(got, "Created "+filepath.Join(f.root, "docs/flow.svg")) {
		t.Errorf("output_path answer = %s", got)
	}
	if svg := f.read("docs/flow.svg"); !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "SIL OPEN FONT LICENSE") {
		t.Errorf("written SVG = %.200s", svg)
	}
	f.expectOK("render_mermaid", map[string]any{"source": diagram, "format": "png", "output_path": "flow.png"})
	if png := f.read("flow.png"); !strings.HasPrefix(png, "\x89PNG\r\n\x1a\n") {
		t.Errorf("flow.png lacks the PNG magic")
	}
	f.expectErr("render_mermaid", map[string]any{"source": diagram, "output_path": "../outside/x.svg"}, "outside the workspace root")
	f.expectErr("render_mermaid", map[string]any{"source": diagram, "format": "png", "output_path": "x.svg"}, "ends in .svg but format is png")
	f.expectErr("render_mermaid", map[string]any{"source": "graph TD\n  A -->"}, "mmdc failed")
	// Without mmdc on PATH: refused at once, naming the install command.
	t.Setenv("PATH", "/usr/bin:/bin")
	f.expectErr("render_mermaid", map[string]any{"source": diagram}, "PUPPETEER_SKIP_DOWNLOAD=1 npm install -g @mermaid-js/mermaid-cli@"+MermaidCLIVersion)
}

// BenchmarkRenderMermaid: one confined render (mmdc and Chromium start
// each time), the SVG returned inline.
func BenchmarkRenderMermaid(b *testing.B) {
	mermaidPath(b)
	cfg := config.Workspace{Root: b.TempDir(), MaxOutput: config.DefaultWorkspaceMaxOutput, StateDir: b.TempDir(),
		Bash: config.Bash{Timeout: time.Minute, MaxTimeout: time.Minute}}
	w, err := Open(&config.Backend{Name: "bench", Transport: config.TransportWorkspace, Workspace: &cfg}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	args := json.RawMessage(`{"source":"graph TD; A-->B"}`)
	for b.Loop() {
		if res := w.Call(b.Context(), "render_mermaid", args); res.IsError {
			b.Fatal(res.TextContent())
		}
	}
}
