package config

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWorkspaceBackend(t *testing.T) {
	cfg := mustLoad(t, `version: 1
gateway: {state_dir: st}
backends:
  repo:
    transport: workspace
    root: .
    readonly: true
    max_output: 5000
    snapshot_max_size: 10MiB
    snapshot_max_files: 500
    bash:
      timeout: 30s
      max_timeout: 1m
      env: [GOPATH, GOFLAGS, GOPATH]
      network: true
      unconfined: true
      background_max: 2h
      git_identity: "Ada Lovelace <ada@example.com>"
      user_gitconfig: true
    lsp:
      idle: 30s
      servers:
        python: [pylsp]
        go: [/opt/gopls, -remote=auto]
  scratch: {transport: workspace, root: .}
`, nil)
	repo, _ := cfg.Backend("repo")
	want := &Workspace{Root: cfg.Dir, ReadOnly: true, MaxOutput: 5000, Budget: 5000, StateDir: filepath.Join(cfg.Dir, "st", "workspace", "repo"),
		SnapshotMaxSize: 10 << 20, SnapshotMaxFiles: 500,
		Bash: Bash{Timeout: 30 * time.Second, MaxTimeout: time.Minute, Env: []string{"GOPATH", "GOFLAGS"}, Network: true, Unconfined: true,
			BackgroundMax: 2 * time.Hour, GitIdentity: "Ada Lovelace <ada@example.com>", UserGitConfig: true},
		LSP: LSP{Idle: 30 * time.Second, Servers: map[string][]string{"go": {"/opt/gopls", "-remote=auto"}, "python": {"pylsp"},
			"typescript": {"typescript-language-server", "--stdio"}, "javascript": {"typescript-language-server", "--stdio"}}}}
	if diff := cmp.Diff(want, repo.Workspace); diff != "" {
		t.Errorf("repo (-want +got):\n%s", diff)
	}
	if repo.Timeout != time.Minute+workspaceTimeoutMargin {
		t.Errorf("repo timeout = %s, want bash.max_timeout plus the margin", repo.Timeout)
	}
	scratch, _ := cfg.Backend("scratch")
	// The budget is gateway.output.truncate_at's 40,000 below max_output's
	// 100,000: the pipeline would cut a larger Read's middle.
	wantDef := &Workspace{Root: cfg.Dir, MaxOutput: DefaultWorkspaceMaxOutput, Budget: 40000, StateDir: filepath.Join(cfg.Dir, "st", "workspace", "scratch"),
		SnapshotMaxSize: 1 << 30, SnapshotMaxFiles: 100000,
		Bash: Bash{Timeout: DefaultBashTimeout, MaxTimeout: DefaultBashMaxTimeout, BackgroundMax: 8 * time.Hour, GitIdentity: "kiln workspace <kiln@workspace.invalid>"},
		LSP:  LSP{Idle: 10 * time.Minute, Servers: DefaultLSPServers}}
	if diff := cmp.Diff(wantDef, scratch.Workspace); diff != "" {
		t.Errorf("scratch defaults (-want +got):\n%s", diff)
	}
}

func TestWorkspaceProblems(t *testing.T) {
	const head = "version: 1\nbackends:\n  repo:\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no root", head + "    transport: workspace\n",
			[]string{`kiln.yaml:3: backends.repo.root: missing; workspace backends need the folder their tools work in, e.g. root: ./project`}},
		{"missing folder", head + "    transport: workspace\n    root: nope\n",
			[]string{`kiln.yaml:5: backends.repo.root: "nope" is not an existing folder; create it or point root at one`}},
		{"root without transport", head + "    root: .\n",
			[]string{`kiln.yaml:3: backends.repo.transport: missing; add transport: workspace to serve kiln's file and shell tools over root`}},
		{"command on workspace", head + "    transport: workspace\n    root: .\n    command: x\n",
			[]string{`kiln.yaml:6: backends.repo.command: not used by workspace backends; remove it (Bash variables go in bash.env as a list of names)`}},
		{"root on stdio", head + "    command: x\n    root: .\n",
			[]string{`kiln.yaml:5: backends.repo.root: only used by workspace backends; remove it or set transport: workspace`}},
		{"unknown bash key", head + "    transport: workspace\n    root: .\n    bash: {timout: 5s}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.timout: unknown key; did you mean "timeout"?`}},
		{"env mapping", head + "    transport: workspace\n    root: .\n    bash: {env: {A: b}}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.env: is a mapping; bash.env lists the names of kiln's variables passed through, e.g. [GOPATH, GOFLAGS]`}},
		{"max below timeout", head + "    transport: workspace\n    root: .\n    bash: {timeout: 5m, max_timeout: 1m}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.max_timeout: 1m0s is shorter than bash.timeout (5m0s); raise max_timeout to at least 5m0s or lower timeout`}},
		{"background below timeout", head + "    transport: workspace\n    root: .\n    bash: {timeout: 5m, background_max: 1m}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.background_max: 1m0s is shorter than bash.timeout (5m0s); raise background_max to at least 5m0s`}},
		{"bad git identity", head + "    transport: workspace\n    root: .\n    bash: {git_identity: ada}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.git_identity: "ada" is not a git identity; write it as Name <email>, e.g. "kiln workspace <kiln@workspace.invalid>", or "" to leave it to git's config`}},
		{"network yes", head + "    transport: workspace\n    root: .\n    bash: {network: yes}\n",
			[]string{`kiln.yaml:6: backends.repo.bash.network: want true or false, got "yes"`}},
		{"zero max output", head + "    transport: workspace\n    root: .\n    max_output: 0\n",
			[]string{`kiln.yaml:6: backends.repo.max_output: want a positive whole number such as 100000, got "0"`}},
		{"tiny snapshot size", head + "    transport: workspace\n    root: .\n    snapshot_max_size: 10\n",
			[]string{`kiln.yaml:6: backends.repo.snapshot_max_size: "10" is too small; use 1KiB to 1024GiB`}},
		{"snapshot size unit", head + "    transport: workspace\n    root: .\n    snapshot_max_size: 2g\n",
			[]string{`kiln.yaml:6: backends.repo.snapshot_max_size: invalid size "2g"; use bytes or a number with B, KB, KiB, MB, MiB, GB or GiB (did you mean 2GiB?)`}},
		{"zero snapshot files", head + "    transport: workspace\n    root: .\n    snapshot_max_files: 0\n",
			[]string{`kiln.yaml:6: backends.repo.snapshot_max_files: want a positive whole number such as 100000, got "0"`}},
		{"lsp unknown language", head + "    transport: workspace\n    root: .\n    lsp: {servers: {rust: [rust-analyzer]}}\n",
			[]string{`kiln.yaml:6: backends.repo.lsp.servers.rust: "rust" is not a language kiln runs a server for; use one of go, typescript, javascript, python`}},
		{"lsp command not a list", head + "    transport: workspace\n    root: .\n    lsp:\n      servers: {go: gopls}\n",
			[]string{`kiln.yaml:7: backends.repo.lsp.servers.go: is a single value; want the command and its arguments as a list, e.g. [gopls]`}},
		{"lsp empty command", head + "    transport: workspace\n    root: .\n    lsp:\n      servers: {go: [\"\"]}\n",
			[]string{`kiln.yaml:7: backends.repo.lsp.servers.go[0]: the command is empty; name the server's executable, e.g. [gopls]`}},
		{"lsp idle zero", head + "    transport: workspace\n    root: .\n    lsp: {idle: 0s}\n",
			[]string{`kiln.yaml:6: backends.repo.lsp.idle: must be positive, got "0s"; use e.g. 30s`}},
		{"lsp unknown key", head + "    transport: workspace\n    root: .\n    lsp: {idel: 5m}\n",
			[]string{`kiln.yaml:6: backends.repo.lsp.idel: unknown key; did you mean "idle"?`}},
		{"lsp on stdio", head + "    command: x\n    lsp: {idle: 5m}\n",
			[]string{`kiln.yaml:5: backends.repo.lsp: only used by workspace backends; remove it or set transport: workspace`}},
		{"snapshot size on stdio", head + "    command: x\n    snapshot_max_size: 1GiB\n",
			[]string{`kiln.yaml:5: backends.repo.snapshot_max_size: only used by workspace backends; remove it or set transport: workspace`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectProblems(t, tt.yaml, nil, tt.want) })
	}
}

func TestRegisterRefusesWorkspace(t *testing.T) {
	base := mustLoad(t, "version: 1\n", nil)
	_, err := ParseBackend("ws", json.RawMessage(`{"transport":"workspace","root":"."}`), base)
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Key != "backends.ws.transport" {
		t.Fatalf("ParseBackend = %v, want one problem at backends.ws.transport", err)
	}
}

// TestWorkspaceSchema checks the schema accepts a full workspace backend
// and rejects what the loader rejects.
func TestWorkspaceSchema(t *testing.T) {
	sch := compileSchema(t)
	const head = "version: 1\nbackends:\n  repo:\n"
	good := head + "    transport: workspace\n    root: .\n    readonly: true\n    max_output: 100\n    snapshot_max_size: 2GiB\n    snapshot_max_files: 10\n    bash: {timeout: 1m, max_timeout: 2m, env: [A], network: false, unconfined: false}\n"
	if err := sch.Validate(yamlInstance(t, []byte(good))); err != nil {
		t.Errorf("schema rejected a valid workspace: %v", err)
	}
	if _, err := loadYAML(t, good, nil, ""); err != nil {
		t.Errorf("loader rejected a valid workspace: %v", err)
	}
	for name, text := range map[string]string{
		"no root":          head + "    transport: workspace\n",
		"root on stdio":    head + "    command: x\n    root: .\n",
		"bash on http":     head + "    transport: http\n    url: http://a.test\n    bash: {timeout: 1m}\n",
		"url on workspace": head + "    transport: workspace\n    root: .\n    url: http://a.test\n",
		"unknown bash key": head + "    transport: workspace\n    root: .\n    bash: {shell: zsh}\n",
		"env as mapping":   head + "    transport: workspace\n    root: .\n    bash: {env: {A: b}}\n",
		"network yes":      head + "    transport: workspace\n    root: .\n    bash: {network: yes}\n",
		"files on http":    head + "    transport: http\n    url: http://a.test\n    snapshot_max_files: 10\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := loadYAML(t, text, nil, ""); !errors.Is(err, ErrInvalid) {
				t.Errorf("loader: %v, want ErrInvalid", err)
			}
			if err := sch.Validate(yamlInstance(t, []byte(text))); err == nil {
				t.Errorf("schema accepted it")
			}
		})
	}
}

// TestWorkspaceOverride shows root and readonly follow KILN_ overrides
// like other scalar backend keys.
func TestWorkspaceOverride(t *testing.T) {
	cfg := mustLoad(t, "version: 1\nbackends:\n  repo: {transport: workspace, root: .}\n", map[string]string{"KILN_BACKENDS_REPO_READONLY": "true"})
	if b, _ := cfg.Backend("repo"); !b.Workspace.ReadOnly {
		t.Error("KILN_BACKENDS_REPO_READONLY=true did not apply")
	}
}

func TestWorkspaceExplicitTimeout(t *testing.T) {
	cfg := mustLoad(t, "version: 1\nbackends:\n  repo: {transport: workspace, root: ., timeout: 5s}\n", nil)
	if b, _ := cfg.Backend("repo"); b.Timeout != 5*time.Second {
		t.Errorf("timeout = %s, want the 5s the config sets", b.Timeout)
	}
}

func TestWorkspaceEqual(t *testing.T) {
	a := &Workspace{Root: "/r", Bash: Bash{Env: []string{"A"}}}
	b := *a
	b.Bash.Env = []string{"A"}
	if !a.Equal(&b) || !(*Workspace)(nil).Equal(nil) {
		t.Error("equal settings differ")
	}
	for _, edit := range []func(w *Workspace){
		func(w *Workspace) { w.Root = "/s" },
		func(w *Workspace) { w.ReadOnly = true },
		func(w *Workspace) { w.Bash.Network = true },
		func(w *Workspace) { w.Bash.Env = nil },
		func(w *Workspace) { w.Bash.MaxTimeout = 1 },
		func(w *Workspace) { w.SnapshotMaxSize = 1 },
		func(w *Workspace) { w.SnapshotMaxFiles = 1 },
	} {
		c := *a
		c.Bash.Env = slices.Clone(a.Bash.Env)
		edit(&c)
		if a.Equal(&c) || a.Equal(nil) {
			t.Errorf("changed settings compare equal: %+v", c)
		}
	}
}

// TestGitIdentityEmpty: git_identity "" leaves commits to git's own
// config (no GIT_AUTHOR_* for Bash).
func TestGitIdentityEmpty(t *testing.T) {
	cfg := mustLoad(t, "version: 1\nbackends:\n  repo:\n    transport: workspace\n    root: .\n    bash: {git_identity: \"\"}\n", nil)
	b, _ := cfg.Backend("repo")
	if b.Workspace.Bash.GitIdentity != "" {
		t.Errorf("git_identity \"\" = %q, want empty", b.Workspace.Bash.GitIdentity)
	}
	if name, email := SplitGitIdentity(DefaultGitIdentity); name != "kiln workspace" || email != "kiln@workspace.invalid" {
		t.Errorf("SplitGitIdentity(default) = %q, %q", name, email)
	}
}
