package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/workspace/lsp"
)

// The navigation tools ask a language server, one per (workspace,
// language), started on the first call that needs it. The server runs as
// a Bash command would ("kiln workspace-exec" with Landlock: the root
// read-write, the toolchains and the server's own install read-only, no
// network unless bash.network): a server reads what the project names
// (a go.mod replace, a tsconfig path), and outside root it gets EACCES.
// kiln stops it after lsp.idle without a request, with the workspace,
// and with kiln itself (Pdeathsig, and in its PID namespace the first
// process's death ends its children). A server that exits on its own is
// restarted with backoff on the next call, which reports the crash once.

// Bounds on talking to a server: every request has one, so a stuck
// server costs a tool call its timeout, never a hang.
const (
	lspStartTimeout   = 60 * time.Second // process start and initialize (gopls loads the module)
	lspRequestTimeout = 30 * time.Second
	lspStopTimeout    = 500 * time.Millisecond // for shutdown, then for exit, before the kill: gopls busy diagnosing answers neither sooner, and a server keeps nothing that matters
	lspMaxBackoff     = 30 * time.Second
	// lspStderrMax is how much of a server's stderr a crash report quotes.
	lspStderrMax = 600
)

// Pinned versions kiln is tested with; the install hints name them and
// the Makefile (make lsp) installs the same.
const (
	GoplsVersion            = "v0.23.0"
	TypeScriptServerVersion = "5.3.0"
	TypeScriptVersion       = "5.9.3"
	PyrightVersion          = "1.1.414"
)

// langOf maps a file's extension to its LSP language, "" for none.
func langOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".go":
		return "go"
	case ".ts", ".tsx", ".mts", ".cts":
		return "typescript"
	case ".js", ".jsx", ".mjs", ".cjs":
		return "javascript"
	case ".py", ".pyi":
		return "python"
	}
	return ""
}

// languageID is the didOpen languageId of a file.
func languageID(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".tsx":
		return "typescriptreact"
	case ".jsx":
		return "javascriptreact"
	}
	return langOf(path)
}

// langTitle is a language as a message names it.
var langTitle = map[string]string{"go": "Go", "typescript": "TypeScript", "javascript": "JavaScript", "python": "Python"}

// installHint says how to install a default server.
func installHint(lang string) string {
	switch lang {
	case "go":
		return fmt.Sprintf("go install golang.org/x/tools/gopls@%s (or, in kiln's source, make lsp)", GoplsVersion)
	case "typescript", "javascript":
		return fmt.Sprintf("npm install -g typescript-language-server@%s typescript@%s (or, in kiln's source, make lsp and put tests/lsp/node_modules/.bin on PATH)", TypeScriptServerVersion, TypeScriptVersion)
	case "python":
		return fmt.Sprintf("npm install -g pyright@%s (or, in kiln's source, make lsp and put tests/lsp/node_modules/.bin on PATH)", PyrightVersion)
	}
	return "install it"
}

// ToolCacheDir is kiln's tool cache, searched for a server's command
// after PATH: $XDG_CACHE_HOME/kiln/bin, by default ~/.cache/kiln/bin.
func ToolCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "kiln", "bin")
}

// serverCommand is the command configured for lang.
func (w *Workspace) serverCommand(lang string) []string {
	if c := w.cfg.LSP.Servers[lang]; len(c) > 0 {
		return c
	}
	return config.DefaultLSPServers[lang]
}

// serverKey names the process serving lang: JavaScript shares
// TypeScript's when their commands are the same.
func (w *Workspace) serverKey(lang string) string {
	if lang == "javascript" && strings.Join(w.serverCommand("javascript"), "\x00") == strings.Join(w.serverCommand("typescript"), "\x00") {
		return "typescript"
	}
	return lang
}

// lookServer finds a server's executable on PATH or in the tool cache.
func lookServer(name string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if d := ToolCacheDir(); d != "" {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// serverReadable are the folders a confined server reads besides the
// system's: its install (the whole node_modules of a Node server, whose
// typescript-language-server loads typescript beside it) and node's.
func serverReadable(exe string) []string {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		real = exe
	}
	dir := filepath.Dir(real)
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			dir = d
		}
	}
	ro := []string{dir}
	if node, err := exec.LookPath("node"); err == nil {
		if real, err := filepath.EvalSymlinks(node); err == nil {
			ro = append(ro, filepath.Dir(filepath.Dir(real)))
		}
	}
	return ro
}

// lspSet is a workspace's running language servers.
type lspSet struct {
	mu       sync.Mutex
	servers  map[string]*langServer
	starting map[string]*sync.Mutex
	crashes  map[string]*crashState
	closed   bool
	// reaping counts idle servers being stopped, which Close waits for.
	reaping sync.WaitGroup
}

// crashState remembers a server's crashes in a row, when it may start
// again, and the report the next call carries.
type crashState struct {
	count int
	next  time.Time
	note  string
}

// langServer is one running server.
type langServer struct {
	key, lang, name string
	proc            *shell
	conn            *lsp.Conn
	stderr          *outBuf
	started         time.Time
	// stopping is set when kiln ends the server (idle, close), so its
	// exit is not a crash.
	stopping bool

	mu   sync.Mutex
	docs map[string]*openDoc // by URI
	// ready is set once the first document was opened and its project
	// loaded (awaitProject).
	ready bool
	// files are the language's files on disk at the last scan (scanDisk).
	files    map[string]stamp
	busy     int
	lastUsed time.Time
	idle     *time.Timer
}

type openDoc struct {
	version int
	text    string
	// syms are the document's symbols at symsVersion (documentSymbols).
	syms        []lsp.Symbol
	symsVersion int
}

func (w *Workspace) lspState() *lspSet {
	w.lspOnce.Do(func() {
		w.lsps = &lspSet{servers: map[string]*langServer{}, starting: map[string]*sync.Mutex{}, crashes: map[string]*crashState{}}
	})
	return w.lsps
}

// running returns the server for lang if one is running, nil otherwise.
func (w *Workspace) running(lang string) *langServer {
	set := w.lspState()
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.servers[w.serverKey(lang)]
}

// server returns the running server for lang, starting it when needed,
// marked busy until release. note is a crash report to show once.
func (w *Workspace) server(ctx context.Context, tool, lang string) (s *langServer, note string, err error) {
	key := w.serverKey(lang)
	set := w.lspState()
	set.mu.Lock()
	if set.closed {
		set.mu.Unlock()
		return nil, "", errors.New("the workspace is shutting down")
	}
	startMu := set.starting[key]
	if startMu == nil {
		startMu = &sync.Mutex{}
		set.starting[key] = startMu
	}
	set.mu.Unlock()
	startMu.Lock()
	defer startMu.Unlock()

	set.mu.Lock()
	if s = set.servers[key]; s != nil {
		s.acquire()
		set.mu.Unlock()
		return s, "", nil
	}
	var wait time.Duration
	if c := set.crashes[key]; c != nil {
		note, c.note = c.note, ""
		wait = time.Until(c.next)
	}
	set.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, note, fmt.Errorf("the %s language server crashed and restarts in %s (backoff); try again then", langTitle[lang], wait.Round(time.Second))
		}
	}
	s, err = w.startServer(ctx, tool, key, lang)
	if err != nil {
		return nil, note, err
	}
	set.mu.Lock()
	if set.closed {
		set.mu.Unlock()
		s.stop()
		return nil, note, errors.New("the workspace is shutting down")
	}
	set.servers[key] = s
	s.acquire()
	set.mu.Unlock()
	return s, note, nil
}

func (w *Workspace) startServer(ctx context.Context, tool, key, lang string) (*langServer, error) {
	argv := w.serverCommand(lang)
	title := langTitle[lang]
	exe, err := lookServer(argv[0])
	if err != nil {
		tried := strings.Join(argv, " ")
		if slicesEqual(argv, config.DefaultLSPServers[lang]) {
			return nil, fmt.Errorf("%s needs a %s language server, and `%s` is not on kiln's PATH or in its tool cache (%s); install it with %s, or name another server in backends.%s.lsp.servers.%s",
				tool, title, tried, ToolCacheDir(), installHint(lang), w.name, lang)
		}
		return nil, fmt.Errorf("%s needs a %s language server, and `%s` (backends.%s.lsp.servers.%s) is not on kiln's PATH or in its tool cache (%s); install it, or remove the entry to use the default (%s)",
			tool, title, tried, w.name, lang, ToolCacheDir(), installHint(lang))
	}
	var script strings.Builder
	// Caches in the workspace's state folder (read-write for Bash too):
	// gopls's file cache survives a restart of the server.
	fmt.Fprintf(&script, "export XDG_CACHE_HOME=%s; ", shellQuote(filepath.Join(w.cfg.StateDir, "cache", "lsp")))
	if node, err := exec.LookPath("node"); err == nil {
		fmt.Fprintf(&script, "PATH=%s:$PATH; ", shellQuote(filepath.Dir(node)))
	}
	script.WriteString("exec " + shellQuote(exe))
	for _, a := range argv[1:] {
		script.WriteString(" " + shellQuote(a))
	}
	if err := os.MkdirAll(filepath.Join(w.cfg.StateDir, "cache", "lsp"), 0o700); err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	stderr := &outBuf{}
	cmd, err := w.start(script.String(), func(c *exec.Cmd) {
		c.Stdin, c.Stdout, c.Stderr = inR, outW, stderr
		c.WaitDelay = waitDelay
	}, serverReadable(exe)...)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%s: cannot start the %s language server %s: %w", tool, title, argv[0], err)
	}
	s := &langServer{key: key, lang: lang, name: filepath.Base(argv[0]), stderr: stderr, started: time.Now(), docs: map[string]*openDoc{}, lastUsed: time.Now(),
		proc: &shell{id: "lsp-" + key, cmd: cmd, out: stderr, started: time.Now(), done: make(chan struct{})}}
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		s.proc.mu.Lock()
		s.proc.exit = code
		s.proc.mu.Unlock()
		close(s.proc.done)
		outR.Close()
		w.serverExited(s)
	}()
	s.conn = lsp.NewConn(outR, inW)
	ictx, cancel := context.WithTimeout(ctx, lspStartTimeout)
	defer cancel()
	var opts any
	if key == "typescript" {
		// Without it a rename keeps every re-export's public name
		// (export { Round as Circle }) instead of renaming through it.
		opts = map[string]any{"preferences": map[string]any{"providePrefixAndSuffixTextForRename": false}}
	}
	if _, err := s.conn.Initialize(ictx, w.root.dir, opts); err != nil {
		s.stop()
		<-s.proc.done
		return nil, fmt.Errorf("%s: the %s language server (%s) did not start: %v%s", tool, title, strings.Join(argv, " "), err, s.stderrTail())
	}
	w.log.Info("workspace: language server started", "backend", w.name, "language", key, "command", argv[0], "took", time.Since(s.started).Round(time.Millisecond))
	return s, nil
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// stderrTail is the end of the server's stderr, for a failure message.
func (s *langServer) stderrTail() string {
	text, _, _ := s.stderr.since(max(0, s.stderr.written()-lspStderrMax))
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return "; its last output: " + text
}

// serverExited forgets an exited server; unless kiln stopped it, that is
// a crash: the next call restarts it after the backoff and says so.
func (w *Workspace) serverExited(s *langServer) {
	set := w.lspState()
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.servers[s.key] == s {
		delete(set.servers, s.key)
	}
	s.mu.Lock()
	stopping := s.stopping
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	if stopping || set.closed {
		return
	}
	c := set.crashes[s.key]
	if c == nil {
		c = &crashState{}
		set.crashes[s.key] = c
	}
	if time.Since(s.started) > 2*lspMaxBackoff {
		c.count = 0 // it ran long enough: start the backoff over
	}
	c.count++
	backoff := time.Duration(0)
	if c.count > 1 {
		backoff = min(time.Second<<(c.count-2), lspMaxBackoff)
	}
	c.next = time.Now().Add(backoff)
	_, status := s.proc.status()
	c.note = fmt.Sprintf("Note: the %s language server (%s) exited unexpectedly (%s%s) and was restarted for this call; results may take a moment while it reloads the project.",
		langTitle[s.lang], s.name, status, s.stderrTail())
	w.log.Warn("workspace: language server crashed", "backend", w.name, "language", s.key, "status", status)
}

func (s *langServer) acquire() {
	s.mu.Lock()
	s.busy++
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// release ends one use and arms the idle timer.
func (w *Workspace) release(s *langServer) {
	idle := cmp.Or(w.cfg.LSP.Idle, config.DefaultLSPIdle)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy--
	s.lastUsed = time.Now()
	if s.idle == nil {
		s.idle = time.AfterFunc(idle, func() { w.reapIdle(s, idle) })
	} else {
		s.idle.Reset(idle)
	}
}

// reapIdle stops s when it has been idle for idle, or re-arms.
func (w *Workspace) reapIdle(s *langServer, idle time.Duration) {
	set := w.lspState()
	set.mu.Lock()
	s.mu.Lock()
	left := idle - time.Since(s.lastUsed)
	if s.busy > 0 || left > 0 {
		s.idle.Reset(max(left, idle/10))
		s.mu.Unlock()
		set.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if set.servers[s.key] != s {
		set.mu.Unlock()
		return // stopped already, by Close
	}
	delete(set.servers, s.key)
	set.reaping.Add(1)
	set.mu.Unlock()
	defer set.reaping.Done()
	w.log.Info("workspace: language server idle, stopped", "backend", w.name, "language", s.key, "idle", idle)
	s.stop()
}

// stop asks the server to shut down, then kills what is left of it.
func (s *langServer) stop() {
	s.mu.Lock()
	s.stopping = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lspStopTimeout)
	defer cancel()
	_ = s.conn.Shutdown(ctx)
	_ = s.conn.Close()
	t := time.NewTimer(lspStopTimeout)
	defer t.Stop()
	select {
	case <-s.proc.done:
	case <-t.C:
	}
	s.proc.kill()
	<-s.proc.done
}

// stopServers ends every server (Close).
func (w *Workspace) stopServers() {
	set := w.lspState()
	set.mu.Lock()
	set.closed = true
	servers := make([]*langServer, 0, len(set.servers))
	for _, s := range set.servers {
		servers = append(servers, s)
	}
	set.servers = map[string]*langServer{}
	set.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.stop)
	}
	wg.Wait()
	set.reaping.Wait()
}

// ServerPIDs lists the process IDs of the running language servers by
// language (tests, diagnostics).
func (w *Workspace) ServerPIDs() map[string]int {
	set := w.lspState()
	set.mu.Lock()
	defer set.mu.Unlock()
	out := map[string]int{}
	for k, s := range set.servers {
		out[k] = s.proc.cmd.Process.Pid
	}
	return out
}
