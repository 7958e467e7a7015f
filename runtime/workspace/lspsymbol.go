package workspace

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/lsp"
)

// A navigation tool's symbol argument (Parse, pkg.Name, Type.Method) is
// resolved here: through the server's workspace symbols, or a file's
// document symbols, to the declarations it names inside the root.

// symbolHit is one declaration a symbol query matched.
type symbolHit struct {
	sym       lsp.Symbol
	rel, text string
	pos       lsp.Position // of the name itself
}

func (h symbolHit) describe() string {
	lines := lsp.Lines(h.text)
	return fmt.Sprintf("%s %s  %s:%d:%d", lsp.KindName(h.sym.Kind), qualified(h.sym), h.rel, h.pos.Line+1, runeCol(lines, h.pos)+1)
}

func qualified(s lsp.Symbol) string {
	if s.Container == "" || strings.Contains(s.Name, ".") {
		return s.Name
	}
	return lastSeg(s.Container) + "." + s.Name
}

func lastSeg(s string) string { return s[strings.LastIndexAny(s, "/\\")+1:] }

// symbolMatches reports whether a server's symbol is what q names: the
// bare name, or qualified by its container (package, type, class, module)
// as pkg.Name or Type.Method.
func symbolMatches(q string, s lsp.Symbol) bool {
	forms := []string{s.Name}
	if s.Container != "" {
		forms = append(forms, s.Container+"."+s.Name, lastSeg(s.Container)+"."+s.Name)
	}
	for _, f := range forms {
		if f == q || strings.HasSuffix(f, "."+q) {
			return true
		}
	}
	return false
}

// findSymbol resolves t.Symbol to its declarations inside the root.
func (w *Workspace) findSymbol(ctx context.Context, tool string, s *langServer, t target) ([]symbolHit, *toolcall.Result) {
	q := strings.TrimSpace(t.Symbol)
	bare := q[strings.LastIndexByte(q, '.')+1:]
	var syms []lsp.Symbol
	var err error
	if t.FilePath != "" {
		rel, _, fail := w.fileLang(tool, t.FilePath)
		if fail != nil {
			return nil, fail
		}
		uri, _, _, err := s.sync(w, rel)
		if err != nil {
			return nil, w.pathErr(tool, t.FilePath, err)
		}
		if syms, err = s.documentSymbols(ctx, uri); err != nil {
			return nil, w.lspError(tool, s, err)
		}
	} else {
		w.primeProject(ctx, s)
		if syms, err = s.conn.WorkspaceSymbols(ctx, bare); err != nil {
			return nil, w.lspError(tool, s, err)
		}
	}
	var hits []symbolHit
	seen := map[string]bool{}
	for _, sym := range syms {
		if !symbolMatches(q, sym) && !w.matchesInside(ctx, s, q, sym) {
			continue
		}
		rel, ok := w.relOf(sym.Location.URI)
		if !ok {
			continue
		}
		data, err := w.readSource(rel)
		if err != nil {
			continue
		}
		text := string(data)
		pos := sym.Selection.Start
		if sym.Selection == (lsp.Range{}) {
			pos = nameIn(text, sym.Location.Range, sym.Name[strings.LastIndexByte(sym.Name, '.')+1:])
		}
		key := fmt.Sprintf("%s:%d:%d", rel, pos.Line, pos.Character)
		if seen[key] {
			continue
		}
		seen[key] = true
		hits = append(hits, symbolHit{sym: sym, rel: rel, text: text, pos: pos})
	}
	if len(hits) > 1 {
		hits = w.dropAliases(ctx, s, hits)
	}
	if len(hits) == 0 {
		where := "the workspace"
		if t.FilePath != "" {
			where = t.FilePath
		}
		return nil, toolcall.Errorf("%s: no declaration named %q in %s (the %s language server's symbols); check the name with workspace_symbols or Grep", tool, q, where, langTitle[s.lang])
	}
	return hits, nil
}

// matchesInside reports whether a symbol the server gave without its
// container (typescript-language-server's workspace symbols have none)
// is what a qualified q names, by the enclosing declaration in its
// file's document symbols.
func (w *Workspace) matchesInside(ctx context.Context, s *langServer, q string, sym lsp.Symbol) bool {
	bare := q[strings.LastIndexByte(q, '.')+1:]
	if sym.Container != "" || !strings.Contains(q, ".") || sym.Name != bare {
		return false
	}
	rel, ok := w.relOf(sym.Location.URI)
	if !ok {
		return false
	}
	uri, _, _, err := s.sync(w, rel)
	if err != nil {
		return false
	}
	doc, err := s.documentSymbols(ctx, uri)
	if err != nil {
		return false
	}
	for _, d := range doc {
		if d.Name == sym.Name && d.Container != "" && contains(d.Location.Range, sym.Location.Range.Start) {
			sym.Container = d.Container
			return symbolMatches(q, sym)
		}
	}
	return false
}

// aliasLineRE matches a line that imports or re-exports names.
var aliasLineRE = regexp.MustCompile(`^\s*(import\b|from\s+\S+\s+import\b|export\s*(\{|\*|type\s*\{))`)

// dropAliases leaves out matches that are not declarations but names
// bound to one (an import, a re-export: TypeScript and Python list them
// as symbols): those whose definition lies elsewhere. When every match
// is one, they are kept.
func (w *Workspace) dropAliases(ctx context.Context, s *langServer, hits []symbolHit) []symbolHit {
	var out []symbolHit
	for _, h := range hits {
		if lines := lsp.Lines(h.text); h.pos.Line < len(lines) && aliasLineRE.MatchString(lines[h.pos.Line]) {
			continue // tsserver's definition of a re-export is the re-export
		}
		locs, err := s.conn.Definition(ctx, w.uriOf(h.rel), h.pos)
		if err != nil || len(locs) == 0 {
			out = append(out, h)
			continue
		}
		elsewhere := false
		for _, l := range locs {
			if rel, ok := w.relOf(l.URI); !ok || rel != h.rel || !contains(l.Range, h.pos) {
				elsewhere = true
			}
		}
		if !elsewhere {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return hits
	}
	return out
}

// nameIn finds name as a whole word from r's start (a symbol's range may
// cover its whole declaration: func, class, def come first).
func nameIn(text string, r lsp.Range, name string) lsp.Position {
	lines := lsp.Lines(text)
	re := regexp.MustCompile(`(^|[^\p{L}\p{N}_$])` + regexp.QuoteMeta(name) + `($|[^\p{L}\p{N}_$])`)
	for l := r.Start.Line; l <= r.End.Line && l < len(lines); l++ {
		line := lines[l]
		from := 0
		if l == r.Start.Line {
			from = len(string([]rune(line)[:min(lsp.RuneCol(line, r.Start.Character), len([]rune(line)))]))
		}
		if m := re.FindStringSubmatchIndex(line[from:]); m != nil {
			byteCol := from + m[3]
			return lsp.Position{Line: l, Character: lsp.UTF16Col(line, len([]rune(line[:byteCol])))}
		}
	}
	return r.Start
}

// primeProject opens one file of the server's language when it has none
// open: typescript-language-server loads a project only for an open
// file, and answers workspace/symbol from loaded projects; pyright's
// symbols wait for a first analysis too.
func (w *Workspace) primeProject(ctx context.Context, s *langServer) {
	if s.key == "go" {
		return
	}
	s.mu.Lock()
	n := len(s.docs)
	s.mu.Unlock()
	if n > 0 {
		return
	}
	if files := w.langFiles(ctx, s.lang, 1); len(files) > 0 {
		_, _, _, _ = s.sync(w, files[0])
	}
}
