package config

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kilnmcp/kiln/runtime/pipeline"
)

// Workspace configures a transport: workspace backend: kiln's file and
// shell tools confined to Root (YAML backends.<name>.root and friends).
type Workspace struct {
	// Root is the folder the tools may touch, absolute (relative to the
	// config file's folder when written relative).
	Root string
	// ReadOnly drops the tools that write (Write, Edit, snapshot_restore)
	// and mounts Root read-only for Bash.
	ReadOnly bool
	// MaxOutput caps the text one tool call returns, in bytes; the middle of longer output is cut with a note.
	MaxOutput int
	// Budget is what the tools shape their text to: MaxOutput, or less
	// where the gateway's output pipeline would cut sooner
	// (gateway.output.truncate_at, gateway.max_output_size), so a Read
	// ends at a whole line it names instead of losing its middle there.
	Budget int
	// StateDir holds the workspace's snapshots and build cache:
	// gateway.state_dir/workspace/<name>.
	StateDir string
	// SnapshotMaxSize and SnapshotMaxFiles bound what one snapshot_create
	// copies into StateDir: bytes of file content, and entries (files,
	// folders, symlinks).
	SnapshotMaxSize  int64
	SnapshotMaxFiles int
	Bash             Bash
	LSP              LSP
}

// LSP configures the language servers behind a workspace's navigation
// tools (YAML backends.<name>.lsp).
type LSP struct {
	// Idle is how long a server runs with no request before kiln stops it.
	Idle time.Duration
	// Servers maps a language (go, typescript, javascript, python) to its
	// server's command and arguments: DefaultLSPServers, with the
	// config's entries in place of those it names.
	Servers map[string][]string
}

// LSPLanguages are the languages lsp.servers may name.
var LSPLanguages = []string{"go", "typescript", "javascript", "python"}

// DefaultLSPServers are the servers kiln starts when lsp.servers names
// none for a language: found on PATH or in kiln's tool cache.
var DefaultLSPServers = map[string][]string{
	"go":         {"gopls"},
	"typescript": {"typescript-language-server", "--stdio"},
	"javascript": {"typescript-language-server", "--stdio"},
	"python":     {"pyright-langserver", "--stdio"},
}

// Bash configures a workspace's Bash tool (YAML backends.<name>.bash).
type Bash struct {
	// Timeout applies when a command names none; MaxTimeout
	// caps what a command may ask for.
	Timeout, MaxTimeout time.Duration
	// Env names the variables of kiln's environment passed to commands;
	// nothing else of kiln's environment is.
	Env []string
	// Network lets commands reach the network; without it they run in
	// their own empty network namespace.
	Network bool
	// Unconfined runs commands without Landlock, which a kernel without
	// Landlock requires; the file tools' path checks still apply.
	Unconfined bool
	// BackgroundMax is the longest a background shell runs when its
	// command names no timeout: a dev server outlives MaxTimeout.
	BackgroundMax time.Duration
	// GitIdentity is "Name <email>" for commits made in Bash; empty
	// leaves the identity to git's own config.
	GitIdentity string
	// UserGitConfig lets git read the user's ~/.gitconfig (read-only);
	// the system's /etc/gitconfig is always readable.
	UserGitConfig bool
}

// Workspace defaults, read from keyTable.
var (
	DefaultWorkspaceMaxOutput = defInt("backends.*.max_output")
	DefaultSnapshotMaxSize    = defSize("backends.*.snapshot_max_size")
	DefaultSnapshotMaxFiles   = defInt("backends.*.snapshot_max_files")
	DefaultBashTimeout        = defDuration("backends.*.bash.timeout")
	DefaultBashMaxTimeout     = defDuration("backends.*.bash.max_timeout")
	DefaultBashBackgroundMax  = defDuration("backends.*.bash.background_max")
	DefaultGitIdentity        = keyIndex["backends.*.bash.git_identity"].def
	DefaultLSPIdle            = defDuration("backends.*.lsp.idle")
)

// gitIdentityRE is what git accepts as an identity: a name, then an
// email in angle brackets.
var gitIdentityRE = regexp.MustCompile(`^([^<>\n]*[^<>\s])\s*<([^<>\s]+)>$`)

// workspaceTimeoutMargin lets a command killed at bash.max_timeout still
// report its exit code 124 before the call's own deadline.
const workspaceTimeoutMargin = 10 * time.Second

// workspace checks a workspace backend's keys.
func (b *builder) workspace(rb *rawBackend, sc map[string]value, path string, g Gateway, out *Backend) {
	w := &Workspace{MaxOutput: DefaultWorkspaceMaxOutput, StateDir: filepath.Join(g.StateDir, "workspace", rb.name),
		SnapshotMaxSize: DefaultSnapshotMaxSize, SnapshotMaxFiles: DefaultSnapshotMaxFiles,
		Bash: Bash{Timeout: DefaultBashTimeout, MaxTimeout: DefaultBashMaxTimeout, BackgroundMax: DefaultBashBackgroundMax, GitIdentity: DefaultGitIdentity},
		LSP:  LSP{Idle: DefaultLSPIdle, Servers: maps.Clone(DefaultLSPServers)}}
	out.Workspace = w
	b.lsp(rb, path, w)
	defer func() { w.Budget = workspaceBudget(w.MaxOutput, g) }()
	root := sc["root"]
	if !root.ok {
		b.p.add(rb.line, path+".root", "missing; workspace backends need the folder their tools work in, e.g. root: ./project")
	} else if root = b.expand(root); b.nonEmpty(root, "give the folder the tools work in, e.g. root: ./project") {
		w.Root = b.abs(root.s)
		if fi, err := os.Stat(w.Root); err != nil || !fi.IsDir() {
			b.p.addValue(root, "%s is not an existing folder; create it or point root at one", strconv.Quote(root.raw))
		}
	}
	w.ReadOnly = b.boolean(b.expand(sc["readonly"]), false)
	w.MaxOutput = b.positive(b.expand(sc["max_output"]), DefaultWorkspaceMaxOutput, DefaultWorkspaceMaxOutput)
	if n := b.size(b.expand(sc["snapshot_max_size"]), keyIndex["backends.*.snapshot_max_size"].def); n > 0 {
		w.SnapshotMaxSize = n
	}
	w.SnapshotMaxFiles = b.positive(b.expand(sc["snapshot_max_files"]), DefaultSnapshotMaxFiles, DefaultSnapshotMaxFiles)
	e, ok := rb.keys["bash"]
	if !ok || isNull(e.val) {
		return
	}
	bp := path + ".bash"
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		fields[deref(e.val.Content[i]).Value] = deref(e.val.Content[i+1])
	}
	get := func(k string) value {
		n, ok := fields[k]
		if !ok {
			return value{key: bp + "." + k}
		}
		return b.node(bp+"."+k, n)
	}
	w.Bash.Timeout = b.duration(get("timeout"), DefaultBashTimeout)
	maxV := get("max_timeout")
	w.Bash.MaxTimeout = b.duration(maxV, DefaultBashMaxTimeout)
	if w.Bash.MaxTimeout < w.Bash.Timeout {
		b.p.add(e.key.Line, bp+".max_timeout", "%s is shorter than bash.timeout (%s); raise max_timeout to at least %s or lower timeout",
			w.Bash.MaxTimeout, w.Bash.Timeout, w.Bash.Timeout)
	}
	w.Bash.Network = b.boolean(get("network"), false)
	w.Bash.Unconfined = b.boolean(get("unconfined"), false)
	bgV := get("background_max")
	w.Bash.BackgroundMax = b.duration(bgV, DefaultBashBackgroundMax)
	if w.Bash.BackgroundMax < w.Bash.Timeout {
		b.p.add(e.key.Line, bp+".background_max", "%s is shorter than bash.timeout (%s); raise background_max to at least %s",
			w.Bash.BackgroundMax, w.Bash.Timeout, w.Bash.Timeout)
	}
	if v := get("git_identity"); v.ok && !v.bad {
		v = b.expand(v)
		switch id := strings.TrimSpace(v.s); {
		case id == "":
			w.Bash.GitIdentity = ""
		case gitIdentityRE.MatchString(id):
			w.Bash.GitIdentity = id
		default:
			b.p.addValue(v, "%s is not a git identity; write it as Name <email>, e.g. \"kiln workspace <kiln@workspace.invalid>\", or \"\" to leave it to git's config", strconv.Quote(v.raw))
		}
	}
	w.Bash.UserGitConfig = b.boolean(get("user_gitconfig"), false)
	if n, ok := fields["env"]; ok && !isNull(n) {
		for i, item := range n.Content {
			v := b.node(bp+".env["+strconv.Itoa(i)+"]", deref(item))
			if msg := checkEnvName(v.s); msg != "" {
				b.p.addValue(v, "%s; list variable names such as GOPATH", msg)
				continue
			}
			if !slices.Contains(w.Bash.Env, v.s) {
				w.Bash.Env = append(w.Bash.Env, v.s)
			}
		}
	}
}

// lsp reads a workspace backend's lsp section (its shape was checked by
// the parser).
func (b *builder) lsp(rb *rawBackend, path string, w *Workspace) {
	e, ok := rb.keys["lsp"]
	if !ok || isNull(e.val) {
		return
	}
	lp := path + ".lsp"
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := deref(e.val.Content[i]).Value, deref(e.val.Content[i+1])
		switch k {
		case "idle":
			w.LSP.Idle = b.duration(b.node(lp+".idle", v), DefaultLSPIdle)
		case "servers":
			for j := 0; j+1 < len(v.Content); j += 2 {
				lang, cmdNode := deref(v.Content[j]).Value, deref(v.Content[j+1])
				var argv []string
				for n, item := range cmdNode.Content {
					a := b.expand(b.node(lp+".servers."+lang+"["+strconv.Itoa(n)+"]", deref(item)))
					if n == 0 && strings.TrimSpace(a.s) == "" {
						b.p.addValue(a, "the command is empty; name the server's executable, e.g. [%s]", strings.Join(DefaultLSPServers[lang], ", "))
					}
					argv = append(argv, a.s)
				}
				if len(argv) > 0 {
					w.LSP.Servers[lang] = argv
				}
			}
		}
	}
}

// Equal reports whether two workspace settings are the same, so a reload
// restarts a workspace backend only when they changed. Either may be nil
// (not a workspace).
func (w *Workspace) Equal(o *Workspace) bool {
	if w == nil || o == nil {
		return w == o
	}
	return w.Root == o.Root && w.ReadOnly == o.ReadOnly && w.MaxOutput == o.MaxOutput && w.StateDir == o.StateDir &&
		w.SnapshotMaxSize == o.SnapshotMaxSize && w.SnapshotMaxFiles == o.SnapshotMaxFiles &&
		w.Bash.Timeout == o.Bash.Timeout && w.Bash.MaxTimeout == o.Bash.MaxTimeout && slices.Equal(w.Bash.Env, o.Bash.Env) &&
		w.Bash.Network == o.Bash.Network && w.Bash.Unconfined == o.Bash.Unconfined && w.Budget == o.Budget &&
		w.Bash.BackgroundMax == o.Bash.BackgroundMax && w.Bash.GitIdentity == o.Bash.GitIdentity && w.Bash.UserGitConfig == o.Bash.UserGitConfig &&
		w.LSP.Idle == o.LSP.Idle && maps.EqualFunc(w.LSP.Servers, o.LSP.Servers, slices.Equal)
}

// workspaceBudget is the smaller of max_output and where the gateway's
// pipeline cuts text (see Workspace.Budget).
func workspaceBudget(maxOutput int, g Gateway) int {
	budget := maxOutput
	if g.Output.SmartTruncation {
		budget = min(budget, cmp.Or(g.Output.TruncateAt, pipeline.DefaultTruncateAt))
	}
	return min(budget, cmp.Or(g.MaxOutputSize, pipeline.DefaultMaxOutputSize))
}

// SplitGitIdentity returns the name and email of a bash.git_identity.
func SplitGitIdentity(id string) (name, email string) {
	m := gitIdentityRE.FindStringSubmatch(strings.TrimSpace(id))
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}
