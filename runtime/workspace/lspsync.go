package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/lsp"
)

// Bounds of the diagnostics kiln waits for: a post-edit check is worth
// little once it is late, a diagnostics call may wait a bit longer.
const (
	diagFeedbackWait = 3 * time.Second
	// diagUnchangedWait is how long a server that published for a file
	// before may stay silent after a change before its diagnostics count
	// as unchanged.
	diagUnchangedWait = 1500 * time.Millisecond
	diagToolWait      = 10 * time.Second
	// diagSettle is how long no new publication must arrive before the
	// diagnostics count as complete (servers publish in waves).
	diagSettle = 500 * time.Millisecond
	// diagMaxOpen bounds the files a workspace-wide diagnostics call
	// opens in a server that only checks open files.
	diagMaxOpen = 300
)

// uriOf is the file URI of a path relative to the root.
func (w *Workspace) uriOf(rel string) string { return lsp.URI(filepath.Join(w.root.dir, rel)) }

// relOf maps a server's URI back to a path relative to the root, false
// when it lies outside (a dependency, the toolchain, a symlink leading
// out): such locations are dropped from results, never shown.
func (w *Workspace) relOf(uri string) (string, bool) {
	p, ok := lsp.Path(uri)
	if !ok {
		return "", false
	}
	rel, ok := w.root.inside(filepath.Clean(p))
	if !ok || rel == "." {
		return "", false
	}
	if _, err := w.root.Resolve(rel); err != nil {
		return "", false
	}
	return rel, true
}

// sync makes the server's copy of rel the file's text on disk: opened on
// first use, replaced when it changed since. It reports whether it sent
// anything (the server then publishes fresh diagnostics).
func (s *langServer) sync(w *Workspace, rel string) (uri, text string, sent bool, err error) {
	data, err := w.readSource(rel)
	if err != nil {
		return "", "", false, err
	}
	if !utf8.Valid(data) {
		return "", "", false, errors.New("not UTF-8 text")
	}
	uri, text = w.uriOf(rel), string(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	switch {
	case d == nil:
		s.docs[uri] = &openDoc{version: 1, text: text}
		if err := s.conn.DidOpen(uri, languageID(rel), text); err != nil {
			return uri, text, true, err
		}
		if !s.ready {
			s.awaitProject(uri)
		}
		return uri, text, true, nil
	case d.text != text:
		d.version++
		d.text = text
		return uri, text, true, s.conn.DidChange(uri, d.version, text)
	}
	return uri, text, false, nil
}

// lspProjectWait bounds the wait for a server to load the project of the
// first file it opens.
const lspProjectWait = 20 * time.Second

// awaitProject waits, once per server, for the project of the first
// opened document to load: typescript-language-server answers at once
// while tsserver still loads it, with "any" for every imported name and
// no workspace symbols, and pyright has no workspace symbols before it
// analysed a first file. Their first diagnostics for the document come
// once that is done. gopls answers only once it is ready.
func (s *langServer) awaitProject(uri string) {
	s.ready = true
	if s.key == "go" {
		return
	}
	t := time.NewTimer(lspProjectWait)
	defer t.Stop()
	for s.conn.Diagnostics(uri).Seq == 0 {
		select {
		case <-s.conn.DiagnosticsChanged():
		case <-t.C:
			return
		case <-s.conn.Done():
			return
		}
	}
}

// documentSymbols returns an open document's symbols, asked once per
// version of its text: find_definition widens every answer with them.
func (s *langServer) documentSymbols(ctx context.Context, uri string) ([]lsp.Symbol, error) {
	s.mu.Lock()
	d := s.docs[uri]
	if d != nil && d.syms != nil && d.symsVersion == d.version {
		syms := d.syms
		s.mu.Unlock()
		return syms, nil
	}
	s.mu.Unlock()
	syms, err := s.conn.DocumentSymbols(ctx, uri)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if d != nil && s.docs[uri] == d {
		d.syms, d.symsVersion = syms, d.version
		if syms == nil {
			d.syms = []lsp.Symbol{}
		}
	}
	s.mu.Unlock()
	return syms, nil
}

// syncOpen brings every document the server has open up to date with
// the disk (a Bash command may have changed them).
func (s *langServer) syncOpen(w *Workspace) {
	s.mu.Lock()
	uris := make([]string, 0, len(s.docs))
	for u := range s.docs {
		uris = append(uris, u)
	}
	s.mu.Unlock()
	for _, u := range uris {
		rel, ok := w.relOf(u)
		if ok {
			_, _, _, err := s.sync(w, rel)
			ok = !errors.Is(err, os.ErrNotExist)
		}
		if !ok { // deleted, or replaced by a link leading out
			s.mu.Lock()
			delete(s.docs, u)
			s.mu.Unlock()
			_ = s.conn.DidClose(u)
		}
	}
}

// diskScanMax bounds the files of a language scanNow compares; past it,
// changes made outside kiln's tools go unannounced.
const diskScanMax = 5000

// stamp is what tells a file changed: its modification time and size.
type stamp struct {
	mtime int64
	size  int64
}

// scanDisk announces to the server the files of its language created,
// changed or deleted on disk since the last scan, by a Bash command, a
// snapshot_restore or anything else outside kiln's write tools: servers
// read files they have not opened from disk, and gopls and pyright keep
// what they read until told. The first scan only records.
func (s *langServer) scanDisk(ctx context.Context, w *Workspace) {
	now := map[string]stamp{}
	for _, rel := range w.langFiles(ctx, s.lang, diskScanMax) {
		var st unix.Stat_t
		if unix.Fstatat(w.root.fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			now[rel] = stamp{st.Mtim.Nano(), st.Size}
		}
	}
	s.mu.Lock()
	old := s.files
	s.files = now
	s.mu.Unlock()
	if old == nil {
		return
	}
	var ev []lsp.FileEvent
	for rel, st := range now {
		if was, ok := old[rel]; !ok {
			ev = append(ev, lsp.FileEvent{URI: w.uriOf(rel), Type: lsp.FileCreated})
		} else if was != st {
			ev = append(ev, lsp.FileEvent{URI: w.uriOf(rel), Type: lsp.FileChanged})
		}
	}
	for rel := range old {
		if _, ok := now[rel]; !ok {
			ev = append(ev, lsp.FileEvent{URI: w.uriOf(rel), Type: lsp.FileDeleted})
		}
	}
	if len(ev) > 0 {
		_ = s.conn.FilesChanged(ev)
	}
	// New files are opened too: pyright took the event without adding
	// the file to its workspace symbols in time for the next request.
	opened := 0
	for _, e := range ev {
		if e.Type == lsp.FileCreated && opened < 50 {
			if rel, ok := w.relOf(e.URI); ok {
				_, _, _, _ = s.sync(w, rel)
				opened++
			}
		}
	}
}

// lspChanged tells the running server of rel's language that kiln's own
// tools changed rel: the file is opened with, or changed to, its new
// text, so the next query sees the change.
func (w *Workspace) lspChanged(rel string) *langServer {
	lang := langOf(rel)
	if lang == "" {
		return nil
	}
	s := w.running(lang)
	if s == nil {
		return nil
	}
	// Opened, not only announced as changed on disk: gopls took a
	// didChangeWatchedFiles without updating its workspace symbols.
	_, _, _, _ = s.sync(w, rel)
	return s
}

// waitDiagnostics waits until the server published for uri after seq (or
// already has when fresh is false), then for the publications to settle,
// at most wait in all.
func (s *langServer) waitDiagnostics(ctx context.Context, uri string, seq int, fresh bool, wait time.Duration) (lsp.Diagnostics, bool) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := s.conn.DiagnosticsChanged()
		d := s.conn.Diagnostics(uri)
		if d.Seq > seq || (!fresh && d.Seq > 0) {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			return d, false
		case <-ctx.Done():
			return d, false
		case <-s.conn.Done():
			return d, false
		}
	}
	s.settle(ctx, deadline.C)
	return s.conn.Diagnostics(uri), true
}

// waitPublished waits for a publication after before (when fresh), then
// for the publications to settle, at most wait in all.
func (s *langServer) waitPublished(ctx context.Context, before int, fresh bool, wait time.Duration) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for fresh && s.conn.Published() <= before {
		select {
		case <-s.conn.DiagnosticsChanged():
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		case <-s.conn.Done():
			return
		}
	}
	s.settle(ctx, deadline.C)
}

// settle waits until no publication arrived for diagSettle, or stop.
func (s *langServer) settle(ctx context.Context, stop <-chan time.Time) {
	for {
		changed := s.conn.DiagnosticsChanged()
		quiet := time.NewTimer(diagSettle)
		select {
		case <-changed:
			quiet.Stop()
			continue
		case <-quiet.C:
		case <-stop:
			quiet.Stop()
		case <-ctx.Done():
			quiet.Stop()
		}
		return
	}
}

// formatDiagnostics renders diagnostics of rel as file:line:col severity
// message lines, errors and warnings first when onlyProblems.
func formatDiagnostics(rel, text string, ds []lsp.Diagnostic, onlyProblems bool) []string {
	lines := lsp.Lines(text)
	slices.SortStableFunc(ds, func(a, b lsp.Diagnostic) int {
		if a.Range.Start.Line != b.Range.Start.Line {
			return a.Range.Start.Line - b.Range.Start.Line
		}
		return a.Range.Start.Character - b.Range.Start.Character
	})
	var out []string
	for _, d := range ds {
		sev := lsp.SeverityName(d.Severity)
		if onlyProblems && sev != "error" && sev != "warning" {
			continue
		}
		msg := strings.ReplaceAll(strings.TrimSpace(d.Message), "\n", " ")
		if d.Source != "" {
			msg += " (" + d.Source + ")"
		}
		out = append(out, fmt.Sprintf("%s:%d:%d %s %s", rel, d.Range.Start.Line+1, runeCol(lines, d.Range.Start)+1, sev, msg))
	}
	return out
}

// runeCol is p's zero-based character column in lines.
func runeCol(lines []string, p lsp.Position) int {
	if p.Line < 0 || p.Line >= len(lines) {
		return p.Character
	}
	return lsp.RuneCol(lines[p.Line], p.Character)
}

// lspFeedback is the language server's part of the post-edit check: when
// a server for rel's language is running (none is started for it), its
// errors and warnings for rel, waited for at most diagFeedbackWait.
func (w *Workspace) lspFeedback(ctx context.Context, rel string) string {
	s := w.running(langOf(rel))
	if s == nil {
		return ""
	}
	s.acquire()
	defer w.release(s)
	uri := w.uriOf(rel)
	seq := s.conn.Diagnostics(uri).Seq
	_, text, sent, err := s.sync(w, rel)
	if err != nil {
		return ""
	}
	// typescript-language-server publishes nothing when a file's
	// diagnostics stay the same: after a first publication, silence for
	// a while means unchanged.
	wait := diagFeedbackWait
	if seq > 0 {
		wait = diagUnchangedWait
	}
	d, ok := s.waitDiagnostics(ctx, uri, seq, sent, wait)
	if !ok && d.Seq == 0 {
		return fmt.Sprintf("\n\n(the %s language server's check of %s did not answer within %s)", langTitle[s.lang], rel, wait)
	}
	lines := formatDiagnostics(rel, text, d.Items, true)
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("\n\nThe %s language server (%s) reports in %s:\n%s", langTitle[s.lang], s.name, rel, w.capText(strings.Join(lines, "\n")))
}

// projectLangs are the languages the root's project files name, for the
// tools called without a file: go.mod, tsconfig.json, jsconfig.json or
// package.json, a Python project file.
func (w *Workspace) projectLangs() []string {
	exists := func(name string) bool {
		var st unix.Stat_t
		return unix.Fstatat(w.root.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	var out []string
	if exists("go.mod") || exists("go.work") {
		out = append(out, "go")
	}
	if exists("tsconfig.json") || exists("jsconfig.json") || exists("package.json") {
		out = append(out, "typescript")
	}
	if slices.ContainsFunc(pythonManifests, exists) || exists("pyrightconfig.json") {
		out = append(out, "python")
	}
	return out
}

// langFiles lists up to limit files of lang under the root, as Glob
// would: no hidden or ignored files, no node_modules.
func (w *Workspace) langFiles(ctx context.Context, lang string, limit int) []string {
	var out []string
	filter := newSearchFilter(w.root, ".", false, false)
	errEnough := errors.New("enough")
	_ = w.root.walkTree(ctx, ".", func(rel string, d fs.DirEntry) error {
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "vendor" || d.Name() == "__pycache__") {
			return fs.SkipDir
		}
		if filter.skip(w.root, rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && w.serverKey(langOf(rel)) == w.serverKey(lang) && langOf(rel) != "" {
			out = append(out, rel)
			if len(out) >= limit {
				return errEnough
			}
		}
		return nil
	})
	return out
}

// lspError is a failed request as a tool result: a server that died
// during it is reported as such (the next call restarts it).
func (w *Workspace) lspError(tool string, s *langServer, err error) *toolcall.Result {
	if errors.Is(err, lsp.ErrClosed) {
		return toolcall.Errorf("%s: the %s language server (%s) exited during the request%s; the next call starts it again", tool, langTitle[s.lang], s.name, s.stderrTail())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return toolcall.Errorf("%s: the %s language server (%s) did not answer within %s; it may still be loading the project, try again", tool, langTitle[s.lang], s.name, lspRequestTimeout)
	}
	var re *lsp.ResponseError
	if errors.As(err, &re) {
		return toolcall.Errorf("%s: the %s language server (%s) answered: %s", tool, langTitle[s.lang], s.name, re.Message)
	}
	return toolcall.Errorf("%s: %v", tool, err)
}
