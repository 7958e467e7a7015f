package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/lsp"
)

// identRE is what a new name must be in each language; keywords are
// refused too. Servers check less than this (pyright and tsserver
// accept "1x"), and a rename to a non-identifier breaks every file it
// touches.
var identRE = map[string]*regexp.Regexp{
	"go":         regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`),
	"typescript": regexp.MustCompile(`^[\p{L}_$][\p{L}\p{N}_$]*$`),
	"javascript": regexp.MustCompile(`^[\p{L}_$][\p{L}\p{N}_$]*$`),
	"python":     regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`),
}

var keywords = map[string][]string{
	"go": {"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for", "func", "go", "goto", "if",
		"import", "interface", "map", "package", "range", "return", "select", "struct", "switch", "type", "var"},
	"typescript": {"break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do", "else", "enum", "export",
		"extends", "false", "finally", "for", "function", "if", "import", "in", "instanceof", "new", "null", "return", "super", "switch",
		"this", "throw", "true", "try", "typeof", "var", "void", "while", "with", "let", "static", "yield", "await"},
	"python": {"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else",
		"except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
		"return", "try", "while", "with", "yield"},
}

func init() { keywords["javascript"] = keywords["typescript"] }

func renameSymbolTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "rename_symbol"
	var a struct {
		NewName string `json:"new_name"`
		DryRun  bool   `json:"dry_run"`
	}
	t, lang, fail := w.decodeTargetLang(tool, raw, &a)
	if fail != nil {
		return fail
	}
	if !identRE[lang].MatchString(a.NewName) || slices.Contains(keywords[lang], a.NewName) {
		return toolcall.Errorf("%s: %q is not a valid %s identifier (or is a keyword); nothing was written", tool, a.NewName, langTitle[lang])
	}
	return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
		// Held from the server's answer to the write: an edit in between
		// would make the answer's positions wrong.
		w.writeMu.Lock()
		unlock := sync.OnceFunc(w.writeMu.Unlock) // released early before the post-edit check
		defer unlock()
		sp, fail := w.locate(ctx, tool, s, t)
		if fail != nil {
			return fail
		}
		refused := func(err error) *toolcall.Result {
			r := w.lspError(tool, s, err)
			return toolcall.Errorf("%s; the rename was refused and nothing was written", strings.TrimSuffix(r.TextContent(), "."))
		}
		if err := s.conn.PrepareRename(ctx, sp.uri, sp.pos); err != nil {
			return refused(err)
		}
		we, err := s.conn.Rename(ctx, sp.uri, sp.pos, a.NewName)
		if err != nil {
			return refused(err)
		}
		if len(we.Other) > 0 {
			return toolcall.Errorf("%s: the %s language server's rename also creates, renames or deletes files (%d operation(s)), which kiln does not apply; nothing was written. Rename the files with Bash (git mv) and the symbol with Edit", tool, langTitle[s.lang], len(we.Other))
		}
		if len(we.Changes) == 0 {
			return toolcall.Errorf("%s: the %s language server proposed no edit for this rename; nothing was written", tool, langTitle[s.lang])
		}
		changes, fail := w.renameChanges(tool, we)
		if fail != nil {
			return fail
		}
		if s.key != "go" {
			// gopls checks a rename itself; tsserver and pyright do not.
			if errs := w.trialEdit(ctx, s, changes); len(errs) > 0 {
				return toolcall.Errorf("%s: the rename would introduce errors the %s language server reports (a name clash?), so it was refused and nothing was written:\n%s",
					tool, langTitle[s.lang], w.capText(strings.Join(errs, "\n")))
			}
		}
		edits := 0
		for _, e := range we.Changes {
			edits += len(e)
		}
		summary := fmt.Sprintf("Renamed to %s: %d edit(s) in %d file(s) (%s language server)", a.NewName, edits, len(changes), langTitle[s.lang])
		if a.DryRun {
			unlock()
			var b strings.Builder
			b.WriteString(strings.Replace(summary, "Renamed", "Dry run, nothing written: would rename", 1) + "\n\n")
			for _, c := range changes {
				b.WriteString(unifiedDiff(c.rel, string(c.old), string(c.new)))
			}
			return toolcall.Text(w.capText(b.String()))
		}
		return w.applyEdits(ctx, tool, summary, changes, unlock) // it unlocks before its checks
	})
}

// renameChanges turns a workspace edit into file changes, every file
// through the resolver: one outside the root refuses the whole rename.
func (w *Workspace) renameChanges(tool string, we *lsp.WorkspaceEdit) ([]fileChange, *toolcall.Result) {
	uris := make([]string, 0, len(we.Changes))
	for u := range we.Changes {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	var changes []fileChange
	seen := map[string]bool{}
	for _, u := range uris {
		rel, ok := w.relOf(u)
		if !ok {
			return nil, toolcall.Errorf("%s: the rename would change a file outside the workspace root (a dependency or the toolchain); refused, nothing was written", tool)
		}
		target, err := w.root.resolveTarget(rel)
		if err != nil {
			return nil, w.pathErr(tool, rel, err)
		}
		if seen[target] {
			return nil, toolcall.Errorf("%s: the server's edit names %s twice (through a symlink); refused, nothing was written", tool, rel)
		}
		seen[target] = true
		old, err := w.readSource(target)
		if err != nil {
			return nil, w.pathErr(tool, rel, err)
		}
		out, err := lsp.Apply(string(old), we.Changes[u])
		if err != nil {
			return nil, toolcall.Errorf("%s: %s: %v; refused, nothing was written", tool, rel, err)
		}
		changes = append(changes, fileChange{rel: target, old: old, new: []byte(out)})
	}
	return changes, nil
}

func diagnosticsTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "diagnostics"
	var a struct {
		FilePath string `json:"file_path"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	if a.FilePath != "" {
		rel, lang, fail := w.fileLang(tool, a.FilePath)
		if fail != nil {
			return fail
		}
		return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
			uri := w.uriOf(rel)
			seq := s.conn.Diagnostics(uri).Seq
			_, text, sent, err := s.sync(w, rel)
			if err != nil {
				return w.pathErr(tool, a.FilePath, err)
			}
			wait := diagToolWait
			if seq > 0 {
				wait = diagUnchangedWait // see lspFeedback
			}
			d, ok := s.waitDiagnostics(ctx, uri, seq, sent, wait)
			if !ok && d.Seq == 0 {
				return toolcall.Errorf("%s: the %s language server published no diagnostics for %s within %s; it may still be loading the project, try again", tool, langTitle[s.lang], rel, diagToolWait)
			}
			lines := formatDiagnostics(rel, text, d.Items, false)
			if len(lines) == 0 {
				return toolcall.Text(fmt.Sprintf("No problems in %s (%s language server)", rel, langTitle[s.lang]))
			}
			return toolcall.Text(w.capText(strings.Join(lines, "\n")))
		})
	}
	langs := w.projectLangs()
	if len(langs) == 0 {
		return toolcall.Errorf("%s: no go.mod, tsconfig.json, package.json or Python project file (%s) at the workspace root; give file_path", tool, strings.Join(pythonManifests, ", "))
	}
	var all []string
	var errs []string
	for _, lang := range langs {
		res := w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
			// Servers check the files they have open (gopls checks every
			// package as well): open the language's files, then wait for
			// the publications to settle.
			before := s.conn.Published()
			sent := false
			for _, rel := range w.langFiles(ctx, lang, diagMaxOpen) {
				_, _, opened, _ := s.sync(w, rel)
				sent = sent || opened
			}
			s.waitPublished(ctx, before, sent, diagToolWait)
			for uri, d := range s.conn.AllDiagnostics() {
				rel, ok := w.relOf(uri)
				if !ok || len(d.Items) == 0 {
					continue
				}
				data, err := w.readSource(rel)
				if err != nil {
					continue
				}
				all = append(all, formatDiagnostics(rel, string(data), d.Items, false)...)
			}
			return toolcall.Text("")
		})
		if res.IsError {
			errs = append(errs, res.TextContent())
		}
	}
	slices.Sort(all)
	if len(all) == 0 && len(errs) > 0 {
		return toolcall.Errorf("%s", strings.Join(errs, "\n"))
	}
	out := strings.Join(all, "\n")
	if len(all) == 0 {
		out = "No problems reported by the " + strings.Join(langNames(langs), ", ") + " language server(s)"
	}
	if len(errs) > 0 {
		out += "\n\n" + strings.Join(errs, "\n")
	}
	return toolcall.Text(w.capText(out))
}

func langNames(langs []string) []string {
	out := make([]string, len(langs))
	for i, l := range langs {
		out[i] = langTitle[l]
	}
	return out
}

// trialEdit shows the server the changed texts without writing them and
// returns the errors they add, then puts the server's copies back: a
// rename tsserver or pyright proposes may clash with a name already in
// scope, which they do not check, but which their diagnostics show.
func (w *Workspace) trialEdit(ctx context.Context, s *langServer, changes []fileChange) []string {
	errorsNow := func() map[string]bool {
		out := map[string]bool{}
		for uri, d := range s.conn.AllDiagnostics() {
			rel, ok := w.relOf(uri)
			if !ok {
				continue
			}
			for _, item := range d.Items {
				if lsp.SeverityName(item.Severity) == "error" {
					out[fmt.Sprintf("%s:%d: %s", rel, item.Range.Start.Line+1, strings.ReplaceAll(item.Message, "\n", " "))] = true
				}
			}
		}
		return out
	}
	before := s.conn.Published()
	fresh := false
	for _, c := range changes {
		_, _, sent, _ := s.sync(w, c.rel)
		fresh = fresh || sent
	}
	s.waitPublished(ctx, before, fresh, diagFeedbackWait)
	baseline := errorsNow()
	set := func(text func(fileChange) []byte) {
		for _, c := range changes {
			uri := w.uriOf(c.rel)
			s.mu.Lock()
			d := s.docs[uri]
			if d == nil {
				s.mu.Unlock()
				continue
			}
			d.version++
			d.text = string(text(c))
			v := d.version
			s.mu.Unlock()
			_ = s.conn.DidChange(uri, v, d.text)
		}
	}
	before = s.conn.Published()
	set(func(c fileChange) []byte { return c.new })
	// typescript-language-server publishes nothing when the diagnostics
	// stay the same, so no news within the feedback bound is good news.
	s.waitPublished(ctx, before, true, diagFeedbackWait)
	var added []string
	for e := range errorsNow() {
		if !baseline[e] {
			added = append(added, e)
		}
	}
	set(func(c fileChange) []byte { return c.old })
	slices.Sort(added)
	return added
}
