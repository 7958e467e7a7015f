package sandbox

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
)

// A body without an explicit return yields its last expression statement's
// value, as tier 2 does for one bare call (`await b.t({…})` returns the
// result there) and as a REPL would: `const x = …; await b.t(x)` returns
// what b.t returned, not null. The word is inserted before that statement;
// positions after it on its line are shifted back when stacks are mapped.
const returnWord = "return "

// insertion is where returnWord went, in the wrapped source (1-based line
// and column, columns as the engine reports them); line 0 means none.
type insertion struct{ line, col int }

// shift undoes the insertion for a reported position.
func (in insertion) shift(line, col int) int {
	if in.line != 0 && line == in.line && col > in.col {
		return max(in.col, col-len(returnWord))
	}
	return col
}

// lastExpression returns the 0-based offset, in the source prg was parsed
// from, of the last statement of the wrapped body `(async () => {…})()`
// when that statement is an expression.
func lastExpression(prg *ast.Program) (int, bool) {
	if prg == nil || len(prg.Body) != 1 {
		return 0, false
	}
	es, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return 0, false
	}
	call, ok := es.Expression.(*ast.CallExpression)
	if !ok {
		return 0, false
	}
	fn, ok := call.Callee.(*ast.ArrowFunctionLiteral)
	if !ok {
		return 0, false
	}
	body, ok := fn.Body.(*ast.BlockStatement)
	if !ok || len(body.List) == 0 {
		return 0, false
	}
	last, ok := body.List[len(body.List)-1].(*ast.ExpressionStatement)
	if !ok {
		return 0, false
	}
	return int(last.Idx0()) - 1, true
}

// insertReturn puts returnWord at offset off of src, if what precedes it
// on its line shows a statement starts there.
func insertReturn(src string, off int) (string, bool) {
	if off < 0 || off > len(src) {
		return "", false
	}
	before := src[:off]
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	before = strings.TrimSpace(before)
	if before != "" && !strings.ContainsAny(before[len(before)-1:], ";{}") {
		return "", false
	}
	return src[:off] + returnWord + src[off:], true
}

// offsetOf converts a 1-based line and a 0-based column in UTF-16 code
// units (source maps count so) to a byte offset in src.
func offsetOf(src string, line, col16 int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for units := 0; units < col16; {
		if off >= len(src) || src[off] == '\n' {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(src[off:])
		units += utf16.RuneLen(r)
		if units < 0 {
			units += 2 // invalid rune: one replacement unit
		}
		off += size
	}
	return off, true
}
