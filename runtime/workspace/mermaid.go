package workspace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// render_mermaid runs mermaid-cli (mmdc, from npm) with Debian's headless
// Chromium under the same confinement as Bash: Landlock with the root,
// the private temporary folder and the build cache writable, the system
// folders plus mmdc's node_modules and the font configuration readable,
// and, without network: true, no network. The diagram's source is the
// model's, and Chromium runs with --no-sandbox (its own sandbox needs
// namespaces the confinement already took), so it gets no more than a
// Bash command would. Puppeteer talks to Chromium over a pipe, not a
// loopback port, which the empty network namespace would not have.
// mmdc writes into the private temporary folder; kiln reads the result and
// writes it through the resolver like Write, or returns it.

// MermaidCLIVersion is the @mermaid-js/mermaid-cli version kiln is tested
// with (tests/mermaid/package.json pins the same).
const MermaidCLIVersion = "12.2.0"

// chromiumArgs start Chromium headless, without its own sandbox and
// without reaching for updates, sync or the network on its own.
var chromiumArgs = []string{"--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"}

// mermaidTimeout bounds one render: Chromium's start is most of it.
const mermaidTimeout = 90 * time.Second

// lookMermaid finds mmdc and chromium on kiln's PATH, or says how to
// install what is missing.
func lookMermaid() (mmdc, chromium string, err error) {
	var missing []string
	if p, err := exec.LookPath("mmdc"); err == nil {
		mmdc, _ = filepath.EvalSymlinks(p)
	}
	if mmdc == "" {
		missing = append(missing, fmt.Sprintf("mermaid-cli (mmdc) is not on kiln's PATH; install it with `PUPPETEER_SKIP_DOWNLOAD=1 npm install -g @mermaid-js/mermaid-cli@%s` (no browser download: it uses Debian's chromium), or in kiln's source `make mermaid` and put tests/mermaid/node_modules/.bin on PATH", MermaidCLIVersion))
	}
	for _, c := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(c); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing = append(missing, "chromium is not installed; install it with `apt-get install -y chromium`")
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("render_mermaid cannot render here: %s", strings.Join(missing, "; and "))
	}
	return mmdc, chromium, nil
}

// mermaidReadable are the folders the confined render reads besides the
// system's: mmdc's node_modules, node's and Chromium's installs when
// outside /usr, the font and Chromium configuration.
func mermaidReadable(mmdc, chromium string) []string {
	var ro []string
	dir := filepath.Dir(mmdc)
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			dir = d
		}
	}
	ro = append(ro, dir)
	if node, err := exec.LookPath("node"); err == nil {
		if real, err := filepath.EvalSymlinks(node); err == nil {
			ro = append(ro, filepath.Dir(filepath.Dir(real)))
		}
	}
	if real, err := filepath.EvalSymlinks(chromium); err == nil {
		ro = append(ro, filepath.Dir(real))
	}
	for _, d := range []string{"/etc/fonts", "/etc/chromium", "/etc/chromium.d", "/usr/share/fonts"} {
		if _, err := os.Stat(d); err == nil {
			ro = append(ro, d)
		}
	}
	return ro
}

func renderMermaidTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "render_mermaid"
	var a struct {
		Source     string `json:"source"`
		Format     string `json:"format"`
		OutputPath string `json:"output_path"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	if a.Format == "" {
		a.Format = "svg"
	}
	if strings.TrimSpace(a.Source) == "" {
		return toolcall.Errorf("%s: source is empty; give the diagram's Mermaid text, e.g. graph TD; A-->B", tool)
	}
	var rel string
	if a.OutputPath != "" {
		if w.cfg.ReadOnly {
			return toolcall.Errorf("%s: workspace %q is read-only, so output_path cannot be written; leave it out to get the diagram back", tool, w.name)
		}
		if ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(a.OutputPath)), "."); (ext == "svg" || ext == "png") && ext != a.Format {
			return toolcall.Errorf("%s: output_path %s ends in .%s but format is %s; make them agree", tool, quotePath(a.OutputPath), ext, a.Format)
		}
		var err error
		if rel, err = w.root.resolveTarget(a.OutputPath); err != nil {
			return w.pathErr(tool, a.OutputPath, err)
		}
	}
	mmdc, chromium, err := lookMermaid()
	if err != nil {
		return toolcall.Errorf("%v", err)
	}
	work, err := os.MkdirTemp(w.tmp, "mermaid-")
	if err != nil {
		return toolcall.Errorf("%s: private temporary folder: %v", tool, err)
	}
	defer os.RemoveAll(work)
	cfg, _ := json.Marshal(map[string]any{"executablePath": chromium, "args": chromiumArgs, "pipe": true, "headless": true})
	in, out, pcfg := filepath.Join(work, "in.mmd"), filepath.Join(work, "out."+a.Format), filepath.Join(work, "puppeteer.json")
	for p, data := range map[string][]byte{in: []byte(a.Source), pcfg: cfg} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return toolcall.Errorf("%s: %v", tool, err)
		}
	}
	path := "$PATH"
	if node, err := exec.LookPath("node"); err == nil {
		path = filepath.Dir(node) + ":$PATH"
	}
	// An SVG written to a file embeds its fonts (about 170 kB), so it
	// looks the same anywhere; one returned as text does not, to fit the
	// output budget.
	embed := ""
	if rel == "" && a.Format == "svg" {
		embed = " --no-font-embed"
	}
	script := fmt.Sprintf("PATH=%s; exec %s -q%s -p %s -i %s -o %s 2>&1", path, shellQuote(mmdc), embed, shellQuote(pcfg), shellQuote(in), shellQuote(out))
	text, code, status, err := w.run(ctx, script, min(mermaidTimeout, max(w.cfg.Bash.MaxTimeout, w.cfg.Bash.Timeout)), mermaidReadable(mmdc, chromium)...)
	if err != nil {
		return toolcall.Errorf("%s could not start mmdc: %v", tool, err)
	}
	data, rerr := os.ReadFile(out)
	if code != 0 || rerr != nil || len(data) == 0 {
		return toolcall.Errorf("%s: mmdc failed (%s); the diagram was not rendered:\n%s", tool, status, w.capText(strings.TrimSpace(text)))
	}
	if rel != "" {
		w.writeMu.Lock()
		created, err := w.root.writeFile(rel, data)
		w.writeMu.Unlock()
		if err != nil {
			return w.pathErr(tool, a.OutputPath, err)
		}
		verb := "Updated"
		if created {
			verb = "Created"
		}
		return toolcall.Text(fmt.Sprintf("%s %s: the diagram as %s (%d bytes)", verb, w.display(rel), strings.ToUpper(a.Format), len(data)))
	}
	if a.Format == "png" {
		block, _ := json.Marshal(map[string]string{"type": "image", "data": base64.StdEncoding.EncodeToString(data), "mimeType": "image/png"})
		return &toolcall.Result{Content: []json.RawMessage{block}}
	}
	if len(data) > w.budget() {
		return toolcall.Errorf("%s: the SVG is %d bytes, over this workspace's %d-byte output budget; give output_path to write it into the workspace instead", tool, len(data), w.budget())
	}
	return toolcall.Text(string(data))
}
