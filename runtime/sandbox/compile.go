package sandbox

import (
	"container/list"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/evanw/esbuild/pkg/api"

	"github.com/kilnmcp/kiln/runtime/bridge"
)

// userFile names the script in stack traces and source maps. Programs
// compiled from esbuild output are named compiledFile: goja reports frames
// the source map covers under the map's source (userFile) and the rest
// (esbuild's helpers, the module footer) under compiledFile.
const (
	userFile     = "input.ts"
	compiledFile = "kiln-compiled.js"
)

// The body form runs inside an async arrow so top-level await and return
// work. The prefix shares line 1 with the script so line numbers need no
// shift; columns on line 1 shift by len(bodyPrefix).
const (
	bodyPrefix = "(async () => {"
	bodySuffix = "\n})()"
)

// moduleFooter calls the module's main after esbuild's IIFE assigned its
// exports to __kiln_module.
const moduleFooter = `;(async () => {
const m = __kiln_module;
const main = m && typeof m.default === "function" ? m.default : m && m.main;
if (typeof main !== "function") throw new TypeError("the module exports no function main (use export default async function main() or export async function main())");
return await main();
})()`

var (
	moduleRe = regexp.MustCompile(`(?m)^[ \t]*(?:export\s+(?:default\b|async\b|function\b|const\b|let\b|var\b|class\b|\{)|import\s+[\w{*"'])`)
	// A BigInt literal: goja would parse it, esbuild turns it into a call
	// of the removed BigInt, so such code takes the esbuild path.
	bigintRe = regexp.MustCompile(`(?:^|[^\w$.])(?:\d[\d_]*|0[xXoObB][\da-fA-F_]+)n\b`)
	// `f<T>(x)` is a generic call in TypeScript but parses as two
	// comparisons in JavaScript; anything resembling it takes the esbuild
	// path.
	genericRe = regexp.MustCompile("<\\s*[A-Za-z_$][^;\\n]*>\\s*[(`]")
)

// esbuildOptions lower what goja lacks (for await, async generators) and
// turn BigInt literals into calls of the removed BigInt global.
func esbuildOptions() api.TransformOptions {
	return api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ES2020,
		Supported:  map[string]bool{"async-generator": false, "for-await": false, "bigint": false},
		Sourcemap:  api.SourceMapInline,
		Sourcefile: userFile,
		Charset:    api.CharsetUTF8,
		LogLimit:   10,
	}
}

var errNoSourceMapFiles = errors.New("source maps are only read inline")

// noFiles keeps goja's parser from following a `//# sourceMappingURL=`
// comment to the filesystem: by default it calls os.ReadFile on whatever
// path the script names (a script ending in "/dev/zero" would never
// return). Inline data: maps are decoded without the loader.
var noFiles = parser.WithSourceMapLoader(func(string) ([]byte, error) { return nil, errNoSourceMapFiles })

// unit is a compiled script.
type unit struct {
	prg   *goja.Program
	src   string // as submitted, for hints
	lines int    // lines in src; frames below are the wrapper's
	shift int    // columns added on line 1
	// mapped is set for esbuild output: goja reports source-mapped
	// columns zero-based.
	mapped bool
	// ins is where a return was inserted before the last expression.
	ins insertion
}

// compile turns code into a program, from the cache when possible.
// Failures come back as an Outcome for the model.
func (s *Sandbox) compile(code string) (*unit, *Outcome) {
	if u, ok := s.programs.get(code); ok {
		return u, nil
	}
	fail := func(msg string) (*unit, *Outcome) {
		return nil, &Outcome{Value: nullJSON, IsError: true, Error: msg, Cause: fmt.Errorf("%w: %s", ErrSyntax, firstLine(msg))}
	}
	if strings.TrimSpace(code) == "" {
		return fail("the code is empty; send a script such as `return await backend.tool({...})`")
	}
	if err := checkShape(code, s.lim.MaxCodeBytes, s.lim.MaxNesting); err != nil {
		return fail(err.Error())
	}
	u, msg := transpile(code)
	if u == nil {
		return fail(msg)
	}
	// Large scripts are rare and would crowd out the rest.
	if len(code) <= 32<<10 {
		s.programs.put(code, u)
	}
	return u, nil
}

// transpile compiles code, skipping esbuild when goja parses it as is:
// esbuild costs about as much as the rest of a run.
func transpile(code string) (*unit, string) {
	module := moduleRe.MatchString(code)
	lines := strings.Count(code, "\n") + 1
	if !module && !bigintRe.MatchString(code) && !genericRe.MatchString(code) {
		wrapped := bodyPrefix + code + bodySuffix
		if prog, err := goja.Parse(userFile, wrapped, parser.WithDisableSourceMaps); err == nil {
			var ins insertion
			if off, ok := lastExpression(prog); ok {
				if src, ok := insertReturn(wrapped, off); ok {
					if p2, err := goja.Parse(userFile, src, parser.WithDisableSourceMaps); err == nil {
						pos := prog.File.Position(off)
						prog, ins = p2, insertion{line: pos.Line, col: pos.Column}
					}
				}
			}
			if prg, err := goja.CompileAST(prog, false); err == nil {
				return &unit{prg: prg, src: code, lines: lines, shift: len(bodyPrefix), ins: ins}, ""
			}
		}
	}
	opts := esbuildOptions()
	input, shift := bodyPrefix+code+bodySuffix, len(bodyPrefix)
	if module {
		opts.Format, opts.GlobalName, opts.Footer = api.FormatIIFE, "__kiln_module", moduleFooter
		input, shift = code, 0
	}
	res := api.Transform(input, opts)
	if len(res.Errors) > 0 {
		return nil, syntaxMessage(res.Errors[0], shift)
	}
	prog, err := goja.Parse(compiledFile, string(res.Code), noFiles)
	if err == nil {
		var ins insertion
		if !module {
			prog, ins = returnLast(prog, input, opts)
		}
		var prg *goja.Program
		if prg, err = goja.CompileAST(prog, false); err == nil {
			return &unit{prg: prg, src: code, lines: lines, shift: shift, mapped: true, ins: ins}, ""
		}
	}
	return nil, "SyntaxError: the sandbox engine cannot run this code: " + err.Error()
}

// returnLast finds the last expression statement in esbuild's output,
// follows the source map to where it starts in input, inserts returnWord
// there and transpiles again. Any step failing keeps prog as it was.
func returnLast(prog *ast.Program, input string, opts api.TransformOptions) (*ast.Program, insertion) {
	off, ok := lastExpression(prog)
	if !ok {
		return prog, insertion{}
	}
	pos := prog.File.Position(off)
	if pos.Filename != userFile {
		return prog, insertion{}
	}
	at, ok := offsetOf(input, pos.Line, pos.Column)
	if !ok {
		return prog, insertion{}
	}
	src, ok := insertReturn(input, at)
	if !ok {
		return prog, insertion{}
	}
	res := api.Transform(src, opts)
	if len(res.Errors) > 0 {
		return prog, insertion{}
	}
	p2, err := goja.Parse(compiledFile, string(res.Code), noFiles)
	if err != nil {
		return prog, insertion{}
	}
	// Mapped columns are reported zero-based; mapPositions adds one first.
	return p2, insertion{line: pos.Line, col: pos.Column + 1}
}

// syntaxMessage renders an esbuild error at the user's line and column.
func syntaxMessage(m api.Message, shift int) string {
	if m.Location == nil {
		return "SyntaxError: " + m.Text
	}
	loc := m.Location
	text, col := loc.LineText, loc.Column
	if loc.Line == 1 && shift > 0 {
		text = strings.TrimPrefix(text, bodyPrefix)
		col = max(0, col-shift)
	}
	text = strings.TrimSuffix(text, strings.TrimPrefix(bodySuffix, "\n"))
	runeCol := utf8.RuneCountInString(text[:min(col, len(text))])
	var b strings.Builder
	fmt.Fprintf(&b, "SyntaxError: %s (line %d, column %d)\n", m.Text, loc.Line, runeCol+1)
	gutter := fmt.Sprintf("%d | ", loc.Line)
	b.WriteString(gutter + text + "\n")
	b.WriteString(strings.Repeat(" ", len(gutter)+runeCol) + "^")
	return b.String()
}

//go:embed harden.js
var hardenSource string

var hardenOnce = sync.OnceValues(func() (*goja.Program, error) {
	ast, err := goja.Parse("harden.js", hardenSource, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, err
	}
	return goja.CompileAST(ast, false)
})

func hardenProgram() (*goja.Program, error) { return hardenOnce() }

// preamble is a compiled bridge preamble and what it binds, as the
// bridge table lists it.
type preamble struct {
	prg      *goja.Program
	bindings []bridge.Binding
}

func compilePreamble(name, src string, bindings []bridge.Binding) (*preamble, error) {
	if strings.TrimSpace(src) == "" {
		return &preamble{}, nil
	}
	ast, err := goja.Parse(name, src, noFiles)
	if err != nil {
		return nil, err
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, err
	}
	return &preamble{prg: prg, bindings: bindings}, nil
}

func (s *Sandbox) extraPreamble(src string, bindings []bridge.Binding) (*preamble, error) {
	if src == "" {
		return nil, nil
	}
	if p, ok := s.extras.get(src); ok {
		// The bindings follow from the text, which the cache is keyed by.
		return p, nil
	}
	p, err := compilePreamble("dynamic-preamble.js", src, bindings)
	if err != nil {
		return nil, err
	}
	s.extras.put(src, p)
	return p, nil
}

// programCache is a small LRU keyed by source text.
type programCache[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List
}

type cacheEntry[V any] struct {
	key string
	v   V
}

func newProgramCache[V any](n int) *programCache[V] {
	return &programCache[V]{max: n, items: map[string]*list.Element{}, order: list.New()}
}

func (c *programCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(cacheEntry[V]).v, true
	}
	var zero V
	return zero, false
}

func (c *programCache[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(cacheEntry[V]{key, v})
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(cacheEntry[V]).key)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
