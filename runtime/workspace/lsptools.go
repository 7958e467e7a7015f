package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kilnmcp/kiln/runtime/toolcall"
	"github.com/kilnmcp/kiln/runtime/workspace/lsp"
)

// The navigation tools: find_definition, find_references,
// workspace_symbols, document_symbols, hover, rename_symbol and
// diagnostics, answered by the language server of the file's language
// (lspserver.go). Positions are 1-based lines and characters, as Read
// numbers lines; paths in results are relative to the root.

// withServer runs fn with the server for lang, its open documents synced
// and a deadline on every request; a crash report waiting for this
// server goes in front of the answer.
func (w *Workspace) withServer(ctx context.Context, tool, lang string, fn func(ctx context.Context, s *langServer) *toolcall.Result) *toolcall.Result {
	s, note, err := w.server(ctx, tool, lang)
	if err != nil {
		res := toolcall.Errorf("%v", err)
		return withNote(res, note)
	}
	defer w.release(s)
	s.scanDisk(ctx, w)
	s.syncOpen(w)
	rctx, cancel := context.WithTimeout(ctx, lspRequestTimeout)
	defer cancel()
	return withNote(fn(rctx, s), note)
}

func withNote(res *toolcall.Result, note string) *toolcall.Result {
	if note == "" {
		return res
	}
	out := toolcall.Text(note + "\n\n" + res.TextContent())
	out.IsError = res.IsError
	return out
}

// fileLang resolves path for tool and names its server's language.
func (w *Workspace) fileLang(tool, path string) (rel, lang string, fail *toolcall.Result) {
	rel, err := w.root.resolveTarget(path)
	if err != nil {
		return "", "", w.pathErr(tool, path, err)
	}
	lang = langOf(rel)
	if lang == "" {
		return "", "", toolcall.Errorf("%s works on Go, TypeScript/JavaScript and Python files (.go, .ts, .tsx, .js, .jsx, .py, …); %s is none of them: use Grep", tool, quotePath(path))
	}
	return rel, lang, nil
}

// target is what a navigation tool points at: file_path, line and column,
// or symbol (with file_path optional, narrowing the search to that file).
type target struct {
	FilePath string `json:"file_path"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Symbol   string `json:"symbol"`
}

// spot is a resolved position: the document, its text and the position.
type spot struct {
	rel, uri, text string
	pos            lsp.Position
	lang           string
}

// langOfTarget picks the server a target needs before it is started.
func (w *Workspace) langOfTarget(tool string, t target) (string, *toolcall.Result) {
	if t.FilePath != "" {
		_, lang, fail := w.fileLang(tool, t.FilePath)
		return lang, fail
	}
	if t.Symbol == "" {
		return "", toolcall.Errorf("%s: give file_path with line and column (1-based, as Read numbers lines), or symbol (a name such as Parse, pkg.Name or Type.Method)", tool)
	}
	langs := w.projectLangs()
	if len(langs) == 0 {
		return "", toolcall.Errorf("%s: no go.mod, tsconfig.json, package.json or Python project file (%s) at the workspace root, so the symbol's language is unknown; give file_path too", tool, strings.Join(pythonManifests, ", "))
	}
	return langs[0], nil
}

// locate turns a target into a position, through workspace/symbol (or
// the file's document symbols) for a symbol.
func (w *Workspace) locate(ctx context.Context, tool string, s *langServer, t target) (spot, *toolcall.Result) {
	if t.Symbol == "" {
		if t.FilePath == "" || t.Line == 0 || t.Column == 0 {
			return spot{}, toolcall.Errorf("%s: give file_path, line and column together (1-based), or symbol", tool)
		}
		rel, _, fail := w.fileLang(tool, t.FilePath)
		if fail != nil {
			return spot{}, fail
		}
		uri, text, _, err := s.sync(w, rel)
		if err != nil {
			return spot{}, w.pathErr(tool, t.FilePath, err)
		}
		lines := lsp.Lines(text)
		if t.Line > len(lines) {
			return spot{}, toolcall.Errorf("%s: line %d is past the end of %s (%d lines)", tool, t.Line, rel, len(lines))
		}
		l := lines[t.Line-1]
		if n := len([]rune(l)); t.Column > n+1 {
			return spot{}, toolcall.Errorf("%s: column %d is past the end of line %d of %s (%d characters): %q", tool, t.Column, t.Line, rel, n, cut(l, 120))
		}
		return spot{rel: rel, uri: uri, text: text, lang: s.lang, pos: lsp.Position{Line: t.Line - 1, Character: lsp.UTF16Col(l, t.Column-1)}}, nil
	}
	if t.Line != 0 || t.Column != 0 {
		return spot{}, toolcall.Errorf("%s: give either symbol or line and column, not both", tool)
	}
	cands, fail := w.findSymbol(ctx, tool, s, t)
	if fail != nil {
		return spot{}, fail
	}
	if len(cands) > 1 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: symbol %q matches %d declarations; qualify it (pkg.Name, Type.Method) or give file_path, line and column:\n", tool, t.Symbol, len(cands))
		for _, c := range cands[:min(len(cands), 20)] {
			b.WriteString("  " + c.describe() + "\n")
		}
		return spot{}, toolcall.Errorf("%s", strings.TrimRight(b.String(), "\n"))
	}
	c := cands[0]
	// Requests about a document need it open (typescript-language-server
	// knows no other).
	uri, text, _, err := s.sync(w, c.rel)
	if err != nil {
		return spot{}, w.pathErr(tool, c.rel, err)
	}
	return spot{rel: c.rel, uri: uri, text: text, lang: s.lang, pos: c.pos}, nil
}

// place is a location inside the root as results show it.
type place struct {
	rel        string
	start, end lsp.Position // rune columns, zero-based
	lines      []string
}

// places maps locations to places inside the root, dropping the others
// and counting them.
func (w *Workspace) places(locs []lsp.Location) (out []place, outside int) {
	texts := map[string][]string{}
	for _, l := range locs {
		rel, ok := w.relOf(l.URI)
		if !ok {
			outside++
			continue
		}
		lines, ok := texts[rel]
		if !ok {
			data, err := w.readSource(rel)
			if err != nil {
				outside++
				continue
			}
			lines = lsp.Lines(string(data))
			texts[rel] = lines
		}
		start := lsp.Position{Line: l.Range.Start.Line, Character: runeCol(lines, l.Range.Start)}
		end := lsp.Position{Line: l.Range.End.Line, Character: runeCol(lines, l.Range.End)}
		out = append(out, place{rel: rel, start: start, end: end, lines: lines})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.rel != b.rel {
			return a.rel < b.rel
		}
		if a.start.Line != b.start.Line {
			return a.start.Line < b.start.Line
		}
		return a.start.Character < b.start.Character
	})
	out = slices.CompactFunc(out, func(a, b place) bool { return a.rel == b.rel && a.start == b.start })
	return out, outside
}

func (p place) line(n int) string {
	if n < 0 || n >= len(p.lines) {
		return ""
	}
	return p.lines[n]
}

func outsideNote(n int, what string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("\n(%d %s outside the workspace root, in a dependency or the toolchain, not shown)", n, what)
}

// decodeTargetLang is decodeTarget and the language whose server answers
// for the target (langOfTarget).
func (w *Workspace) decodeTargetLang(tool string, raw json.RawMessage, extra any) (target, string, *toolcall.Result) {
	t, fail := decodeTarget(tool, raw, extra)
	if fail != nil {
		return t, "", fail
	}
	lang, fail := w.langOfTarget(tool, t)
	return t, lang, fail
}

func decodeTarget(tool string, raw json.RawMessage, extra any) (target, *toolcall.Result) {
	var t target
	if err := decode(raw, &t); err != nil {
		return t, toolcall.Errorf("%s: %v", tool, err)
	}
	if extra != nil {
		if err := decode(raw, extra); err != nil {
			return t, toolcall.Errorf("%s: %v", tool, err)
		}
	}
	return t, nil
}

func findDefinitionTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "find_definition"
	t, lang, fail := w.decodeTargetLang(tool, raw, nil)
	if fail != nil {
		return fail
	}
	return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
		var locs []lsp.Location
		if t.Symbol != "" && t.Line == 0 && t.Column == 0 {
			hits, fail := w.findSymbol(ctx, tool, s, t)
			if fail != nil {
				return fail
			}
			for _, h := range hits {
				locs = append(locs, lsp.Location{URI: w.uriOf(h.rel), Range: h.sym.Location.Range})
			}
		} else {
			sp, fail := w.locate(ctx, tool, s, t)
			if fail != nil {
				return fail
			}
			var err error
			if locs, err = s.conn.Definition(ctx, sp.uri, sp.pos); err != nil {
				return w.lspError(tool, s, err)
			}
		}
		locs = w.declRanges(ctx, s, locs)
		ps, outside := w.places(locs)
		if len(ps) == 0 {
			if outside > 0 {
				return toolcall.Text(fmt.Sprintf("The definition lies outside the workspace root (a dependency or the standard library), so it is not shown.%s", ""))
			}
			return toolcall.Errorf("%s: the %s language server knows no definition there; put line and column on the identifier itself (Read numbers lines, columns count characters from 1)", tool, langTitle[s.lang])
		}
		var b strings.Builder
		for i, p := range ps {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s:%d-%d\n", p.rel, p.start.Line+1, p.end.Line+1)
			from := max(0, p.start.Line-2)
			to := min(len(p.lines)-1, max(p.end.Line, p.start.Line+2), p.start.Line+10)
			for n := from; n <= to; n++ {
				fmt.Fprintf(&b, "%6d\t%s\n", n+1, cut(p.line(n), 300))
			}
			if to < p.end.Line {
				fmt.Fprintf(&b, "   …\t(%d more lines to %d; Read for the rest)\n", p.end.Line-to, p.end.Line+1)
			}
		}
		b.WriteString(outsideNote(outside, "more definition(s)"))
		return toolcall.Text(w.capText(b.String()))
	})
}

// declRanges widens each location inside the root that is a
// declaration's name (what servers answer) to the whole declaration,
// from the file's document symbols: the symbol whose name range holds
// it, else the smallest symbol holding it.
func (w *Workspace) declRanges(ctx context.Context, s *langServer, locs []lsp.Location) []lsp.Location {
	out := slices.Clone(locs)
	for i, l := range out {
		rel, ok := w.relOf(l.URI)
		if !ok {
			continue
		}
		uri, _, _, err := s.sync(w, rel)
		if err != nil {
			continue
		}
		syms, err := s.documentSymbols(ctx, uri)
		if err != nil {
			continue
		}
		best := -1
		for j, sym := range syms {
			if contains(sym.Selection, l.Range.Start) {
				best = j
				break
			}
			if contains(sym.Location.Range, l.Range.Start) && (best < 0 || sym.Depth > syms[best].Depth) {
				best = j
			}
		}
		if best >= 0 {
			out[i].Range = syms[best].Location.Range
		}
	}
	return out
}

func contains(r lsp.Range, p lsp.Position) bool {
	before := func(a, b lsp.Position) bool {
		return a.Line < b.Line || (a.Line == b.Line && a.Character <= b.Character)
	}
	return r != (lsp.Range{}) && before(r.Start, p) && before(p, r.End)
}

// defaultRefLimit is find_references' cap without head_limit.
const defaultRefLimit = 500

func findReferencesTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "find_references"
	var a struct {
		IncludeDeclaration bool `json:"include_declaration"`
		HeadLimit          int  `json:"head_limit"`
	}
	t, lang, fail := w.decodeTargetLang(tool, raw, &a)
	if fail != nil {
		return fail
	}
	return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
		sp, fail := w.locate(ctx, tool, s, t)
		if fail != nil {
			return fail
		}
		locs, err := s.conn.References(ctx, sp.uri, sp.pos, a.IncludeDeclaration)
		if err != nil {
			return w.lspError(tool, s, err)
		}
		ps, outside := w.places(locs)
		if len(ps) == 0 {
			return toolcall.Text("No references found" + outsideNote(outside, "reference(s)"))
		}
		limit := defaultRefLimit
		if a.HeadLimit > 0 {
			limit = a.HeadLimit
		}
		files := map[string]bool{}
		for _, p := range ps {
			files[p.rel] = true
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d reference(s) in %d file(s)", len(ps), len(files))
		if a.IncludeDeclaration {
			b.WriteString(", the declaration included")
		}
		b.WriteString(":\n")
		room := w.room(200)
		shown := 0
		last := ""
		for _, p := range ps {
			if shown >= limit || b.Len() > room {
				break
			}
			if p.rel != last {
				b.WriteString("\n" + p.rel + "\n")
				last = p.rel
			}
			fmt.Fprintf(&b, "  %s:%d:%d: %s\n", p.rel, p.start.Line+1, p.start.Character+1, cut(strings.TrimSpace(p.line(p.start.Line)), 200))
			shown++
		}
		if shown < len(ps) {
			fmt.Fprintf(&b, "\n(%d more not shown; raise head_limit or narrow the question)\n", len(ps)-shown)
		}
		b.WriteString(outsideNote(outside, "reference(s)"))
		return toolcall.Text(b.String())
	})
}

func hoverTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "hover"
	t, fail := decodeTarget(tool, raw, nil)
	if fail != nil {
		return fail
	}
	_, lang, fail := w.fileLang(tool, t.FilePath)
	if fail != nil {
		return fail
	}
	return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
		sp, fail := w.locate(ctx, tool, s, t)
		if fail != nil {
			return fail
		}
		text, err := s.conn.Hover(ctx, sp.uri, sp.pos)
		if err != nil {
			return w.lspError(tool, s, err)
		}
		if strings.TrimSpace(text) == "" {
			return toolcall.Text(fmt.Sprintf("Nothing to show at %s:%d:%d (no identifier there?)", sp.rel, t.Line, t.Column))
		}
		return toolcall.Text(w.capText(strings.TrimSpace(text)))
	})
}

// maxSymbols bounds the symbols one answer lists.
const maxSymbols = 200

func workspaceSymbolsTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "workspace_symbols"
	var a struct {
		Query string `json:"query"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	langs := w.projectLangs()
	if len(langs) == 0 {
		return toolcall.Errorf("%s: no go.mod, tsconfig.json, package.json or Python project file (%s) at the workspace root, so no language server knows the project; use document_symbols on a file, or Grep", tool, strings.Join(pythonManifests, ", "))
	}
	var b strings.Builder
	var errs []string
	total, outsideAll := 0, 0
	for _, lang := range langs {
		res := w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
			w.primeProject(ctx, s)
			syms, err := s.conn.WorkspaceSymbols(ctx, a.Query)
			if err != nil {
				return w.lspError(tool, s, err)
			}
			var lines []string
			outside := 0
			for _, sym := range syms {
				ps, out := w.places([]lsp.Location{sym.Location})
				if out > 0 || len(ps) == 0 {
					outside++
					continue
				}
				p := ps[0]
				lines = append(lines, fmt.Sprintf("%s %s  %s:%d:%d-%d", lsp.KindName(sym.Kind), qualified(sym), p.rel, p.start.Line+1, p.start.Character+1, p.end.Line+1))
			}
			if len(lines) == 0 {
				outsideAll += outside
				return toolcall.Text("")
			}
			total += len(lines)
			more := ""
			if len(lines) > maxSymbols {
				more = fmt.Sprintf("\n(%d more not shown; make the query more precise)", len(lines)-maxSymbols)
				lines = lines[:maxSymbols]
			}
			return toolcall.Text(fmt.Sprintf("%s (%s):\n%s%s%s\n", langTitle[lang], s.name, strings.Join(lines, "\n"), more, outsideNote(outside, "symbol(s)")))
		})
		if res.IsError {
			errs = append(errs, res.TextContent())
			continue
		}
		b.WriteString(res.TextContent())
	}
	if total == 0 {
		if len(errs) > 0 {
			return toolcall.Errorf("%s", strings.Join(errs, "\n"))
		}
		return toolcall.Text(fmt.Sprintf("No symbol inside the workspace root matches %q%s", a.Query, outsideNote(outsideAll, "symbol(s)")))
	}
	for _, e := range errs {
		b.WriteString("\n" + e + "\n")
	}
	return toolcall.Text(w.capText(b.String()))
}

func documentSymbolsTool(w *Workspace, ctx context.Context, raw json.RawMessage) *toolcall.Result {
	const tool = "document_symbols"
	var a struct {
		FilePath string `json:"file_path"`
	}
	if err := decode(raw, &a); err != nil {
		return toolcall.Errorf("%s: %v", tool, err)
	}
	rel, lang, fail := w.fileLang(tool, a.FilePath)
	if fail != nil {
		return fail
	}
	return w.withServer(ctx, tool, lang, func(ctx context.Context, s *langServer) *toolcall.Result {
		uri, text, _, err := s.sync(w, rel)
		if err != nil {
			return w.pathErr(tool, a.FilePath, err)
		}
		syms, err := s.documentSymbols(ctx, uri)
		if err != nil {
			return w.lspError(tool, s, err)
		}
		lines := lsp.Lines(text)
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d symbol(s)\n", rel, len(syms))
		for i, sym := range syms {
			if i >= maxSymbols*5 {
				fmt.Fprintf(&b, "(%d more not shown)\n", len(syms)-i)
				break
			}
			r := sym.Location.Range
			detail := ""
			if sym.Detail != "" {
				detail = "  " + cut(strings.ReplaceAll(sym.Detail, "\n", " "), 120)
			}
			fmt.Fprintf(&b, "%s%s %s  %d:%d-%d%s\n", strings.Repeat("  ", sym.Depth), lsp.KindName(sym.Kind), sym.Name, r.Start.Line+1, runeCol(lines, r.Start)+1, r.End.Line+1, detail)
		}
		return toolcall.Text(w.capText(b.String()))
	})
}
