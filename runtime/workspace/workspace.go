package workspace

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/textcut"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Tool is one workspace tool as MCP lists it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations hints           `json:"annotations"`
	// writes marks tools a readonly workspace does not offer.
	writes bool
	// hints are the tool's annotations before the workspace's settings
	// (network) apply.
	hints hints
	call  func(w *Workspace, ctx context.Context, args json.RawMessage) *toolcall.Result
}

// Workspace is one configured workspace backend.
type Workspace struct {
	name string
	cfg  config.Workspace
	// vars are the ${VAR} references of the backend's config
	// (secrets_available names them).
	vars []config.VarRef
	root *Root
	log  *slog.Logger
	// tmp is the private temporary folder Bash may write besides the root.
	tmp string
	// confine is how Bash commands are contained; see confine.go.
	confine *confinement

	// writeMu orders Write and Edit, so an Edit's read, change and
	// rename is not undone by another's.
	writeMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	// warming is set while the Go build cache is filled after Open
	// (warm.go); warmer is that command, which Close ends.
	warming atomic.Bool
	warmer  *shell

	// lsps are the language servers (lspserver.go), made on first use.
	lspOnce sync.Once
	lsps    *lspSet

	mu     sync.Mutex
	shells map[string]*shell
	// background counts the background shells in shells and starting.
	background int
	nextID     int
	closed     bool
}

// Open prepares the workspace of backend b. It refuses to start when Bash
// cannot be confined (no Landlock) and the config does not say unconfined.
func Open(b *config.Backend, log *slog.Logger) (*Workspace, error) {
	if b.Workspace == nil {
		return nil, fmt.Errorf("backend %q: not a workspace backend", b.Name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := *b.Workspace
	conf, err := detectConfinement(cfg.Bash)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", b.Name, err)
	}
	root, err := OpenRoot(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("backend %q: %w", b.Name, err)
	}
	if _, inside := root.inside(realPath(cfg.StateDir)); inside {
		// Beside the snapshots it holds kiln's OAuth tokens and
		// registrations, and snapshot_restore would empty it with the root.
		root.Close()
		return nil, fmt.Errorf("backend %q: kiln's state folder %s lies inside root %s, where the workspace tools could read its tokens and change its files; set gateway.state_dir to a folder outside root", b.Name, cfg.StateDir, root.dir)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		root.Close()
		return nil, fmt.Errorf("backend %q: state folder: %w", b.Name, err)
	}
	tmp, err := os.MkdirTemp("", "kiln-ws-"+b.Name+"-")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("backend %q: private temporary folder: %w", b.Name, err)
	}
	if _, inside := root.inside(tmp); inside {
		// The private folder must not be reachable through the root.
		os.RemoveAll(tmp)
		root.Close()
		return nil, fmt.Errorf("backend %q: the temporary folder %s lies inside root; set TMPDIR elsewhere", b.Name, tmp)
	}
	w := &Workspace{name: b.Name, cfg: cfg, vars: b.Vars, root: root, log: log, tmp: tmp, confine: conf, shells: map[string]*shell{}}
	w.removeDeadPartials()
	w.warm()
	if !conf.landlock {
		log.Warn("workspace Bash runs without Landlock (bash.unconfined: true)", "backend", b.Name)
	}
	return w, nil
}

// Root is the workspace's canonical root folder.
func (w *Workspace) Root() string { return w.root.dir }

// Tools lists the tools this workspace offers.
func (w *Workspace) Tools() []Tool { return Listed(w.cfg) }

// Listed is the tools a workspace with cfg offers, with their annotations:
// known from the config alone, so they are listed before the workspace
// opens (Manifest).
func Listed(cfg config.Workspace) []Tool {
	var out []Tool
	for _, t := range tools {
		if t.writes && cfg.ReadOnly {
			continue
		}
		t.Annotations = t.hints
		if cfg.Bash.Network && (t.Name == "Bash" || strings.HasPrefix(t.Name, "run_")) {
			t.Annotations.OpenWorld = true
		}
		out = append(out, t)
	}
	return out
}

// Manifest is workspace backend b as the registry holds a backend: its
// tools from kiln's source. Registered at start, they are in the first
// tools/list and callable at once, before the workspace has opened.
func Manifest(b *config.Backend) *manifest.Manifest {
	m := &manifest.Manifest{Version: manifest.Version, Backend: b.Name, Transport: b.Transport,
		Server: manifest.ServerInfo{Name: ServerName, Version: ToolsVersion}, ProtocolVersion: Protocol, Instructions: Instructions,
		Tools: []manifest.Tool{}, Resources: []manifest.Resource{}, ResourceTemplates: []manifest.ResourceTemplate{}, Prompts: []manifest.Prompt{}}
	if b.Workspace == nil {
		return m
	}
	for _, t := range Listed(*b.Workspace) {
		ann, _ := json.Marshal(t.Annotations)
		m.Tools = append(m.Tools, manifest.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: ann})
	}
	return m
}

// What the workspace answers to initialize: fixed strings, so a recorded
// manifest does not change with the machine (root path) or kiln's build.
const (
	// Protocol is the handshake version: the newest that still uses
	// initialize, which the client falls back to when server/discover is
	// refused.
	Protocol     = "2025-11-25"
	ServerName   = "kiln-workspace"
	ToolsVersion = "2"
	Instructions = "File and shell tools confined to the workspace root; paths are relative to it or absolute inside it."
)

// Call runs one tool. Failures come back as isError results written for a
// model; a nil Result never.
func (w *Workspace) Call(ctx context.Context, name string, args json.RawMessage) (res *toolcall.Result) {
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return toolcall.Errorf("unknown tool %q; the workspace tools are %s", name, strings.Join(toolNames(), ", "))
	}
	t := tools[i]
	if t.writes && w.cfg.ReadOnly {
		return toolcall.Errorf("%s is not available: workspace %q is read-only (readonly: true in its config)", name, w.name)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if err := checkArgs(t, args); err != nil {
		return toolcall.Errorf("%s: %v", name, err)
	}
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("workspace tool panicked", "tool", name, "panic", p)
			res = toolcall.Errorf("%s failed inside kiln (a bug, logged); try again or use another tool", name)
		}
	}()
	return t.call(w, ctx, args)
}

// Close stops the language servers, kills every shell still running and
// removes the private temporary folder.
func (w *Workspace) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.close() })
	return w.closeErr
}

func (w *Workspace) close() error {
	w.stopServers()
	w.mu.Lock()
	w.closed = true
	shells := make([]*shell, 0, len(w.shells)+1)
	for _, s := range w.shells {
		shells = append(shells, s)
	}
	if w.warmer != nil {
		shells = append(shells, w.warmer)
	}
	w.mu.Unlock()
	for _, s := range shells {
		s.kill()
		<-s.done
	}
	err := os.RemoveAll(w.tmp)
	return errors.Join(err, w.root.Close())
}

func toolNames() []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// decode reads a tool's arguments into v with messages a model can use.
func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("argument %q: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	return nil
}

// pathErr turns a resolve or open failure into a tool error naming what
// was refused and why.
func (w *Workspace) pathErr(tool, p string, err error) *toolcall.Result {
	var pe *PathError
	if errors.As(err, &pe) {
		return toolcall.Errorf("%s refused %s", tool, pe.Error())
	}
	if errors.Is(err, ErrOutside) {
		return toolcall.Errorf("%s refused %s, which leads outside the workspace root %s (%v); use a path inside it", tool, quotePath(p), w.root.dir, err)
	}
	if errors.Is(err, os.ErrNotExist) {
		return toolcall.Errorf("%s: %s does not exist; check the path with Glob", tool, quotePath(p))
	}
	return toolcall.Errorf("%s failed on %s (%s)", tool, quotePath(p), errText(err))
}

// display is how a path is shown back: relative to the root when short,
// else absolute inside it.
func (w *Workspace) display(rel string) string {
	return filepath.Join(w.root.dir, rel)
}

// budget is the most text one result carries (config.Workspace.Budget).
func (w *Workspace) budget() int {
	return cmp.Or(w.cfg.Budget, w.cfg.MaxOutput, config.DefaultWorkspaceMaxOutput)
}

// room is the budget less reserve bytes for a tool's own last line, but
// never under half the budget.
func (w *Workspace) room(reserve int) int {
	b := w.budget()
	return max(b-reserve, b/2)
}

// capText keeps s within the budget, cutting the middle on a character
// boundary and saying how much went.
func (w *Workspace) capText(s string) string {
	return capText(s, w.budget())
}

func capText(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	room := max(limit-120, limit/2) // the note fits in the rest
	head := textcut.Prefix(s, room*2/3)
	tail := textcut.Suffix(s, room-room*2/3)
	return head + fmt.Sprintf("\n[… %d bytes cut to keep the output within the workspace's %d-byte output budget …]\n", len(s)-len(head)-len(tail), limit) + tail
}

// realPath is p absolute with the symlinks of its longest existing
// prefix resolved, for a folder that may not exist yet.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	var rest []string
	for cur := abs; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if cur == filepath.Dir(cur) {
			return abs
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
	}
}
