package sandbox

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// checkShape refuses code whose syntax tree would be too deep or too
// costly for the parsers before they see it. esbuild and goja recurse once
// per nesting level, with kilobytes of Go stack each: 300 KB of `((((…`,
// `!!!!…` or `a.b.b.b…` overflows the 1 GB goroutine stack, a fatal error
// no recover catches, and some chains (`a=>a=>…`, sequences `a,a,…` in
// esbuild, `- - -…` in goja) take quadratic time or worse. Measured at
// 64 KiB of code: esbuild needed 13 s and 1.5 GB for an `if(a)` chain. At
// the default bound (1000) every such chain transpiles in under 30 ms and
// 32 MB.
//
// The estimate is linear and needs no parser: it walks the tokens keeping
// one counter per open bracket. An operator, an operator keyword or an
// opening bracket adds one to the current bracket's counter; `;`, `,` and
// a line break between two statements reset it, because expression
// depth restarts there. The sum of the open counters plus the bracket
// depth bounds how deep any parser can recurse; it must stay within
// maxNesting. Long comma lists outside array literals are capped as well.
func checkShape(code string, maxBytes, maxNesting int) error {
	if len(code) > maxBytes {
		return fmt.Errorf("the code is %d bytes; the limit is %d. Send less code, or move data into tool arguments", len(code), maxBytes)
	}
	sc := shapeScanner{code: code, max: maxNesting, stack: []shapeLevel{{}}}
	return sc.scan()
}

// arrowWeight is what `=>` counts towards the nesting bound.
const arrowWeight = 4

// maxCommas bounds commas in one expression outside array literals:
// esbuild handles long comma sequences in quadratic time (26 s for 16,000).
const maxCommas = 2000

type shapeLevel struct {
	open   byte // '(', '[', '{', '$' for a template substitution, 0 at top
	ops    int
	commas int
}

type shapeScanner struct {
	code    string
	i       int
	max     int
	stack   []shapeLevel
	total   int  // sum of ops over stack
	operand bool // the previous token can end an expression
	nl      bool // a line break since the previous token
}

func (sc *shapeScanner) top() *shapeLevel { return &sc.stack[len(sc.stack)-1] }

func (sc *shapeScanner) tooDeep() error {
	line := 1
	for _, c := range sc.code[:sc.i] {
		if c == '\n' {
			line++
		}
	}
	return fmt.Errorf("the code nests too deeply near line %d (more than %d levels of brackets and operators in one expression); split long expressions into statements", line, sc.max)
}

func (sc *shapeScanner) op() error { return sc.weighted(1) }

func (sc *shapeScanner) weighted(w int) error {
	sc.top().ops += w
	sc.total += w
	sc.operand = false
	if sc.total+len(sc.stack) > sc.max {
		return sc.tooDeep()
	}
	return nil
}

// reset ends the current expression at this bracket level.
func (sc *shapeScanner) reset() {
	t := sc.top()
	sc.total -= t.ops
	t.ops, t.commas = 0, 0
}

// startToken applies the line-break rule: after a token that can end an
// expression, a line break followed by one that can start a statement
// begins a new statement (ASI) — or at worst a call or member chain the
// counters already bound by brackets.
func (sc *shapeScanner) startToken(startsStatement bool) {
	if sc.nl && sc.operand && startsStatement {
		sc.reset()
	}
	sc.nl = false
}

func (sc *shapeScanner) scan() error {
	code := sc.code
	for sc.i < len(code) {
		c := code[sc.i]
		switch {
		case c == '\n' || c == '\r':
			sc.nl = true
			sc.i++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			sc.i++
		case c >= utf8.RuneSelf && sc.space():
		case c == '/' && sc.i+1 < len(code) && code[sc.i+1] == '/':
			for sc.i < len(code) && code[sc.i] != '\n' && code[sc.i] != '\r' {
				sc.i++
			}
		case c == '/' && sc.i+1 < len(code) && code[sc.i+1] == '*':
			sc.i += 2
			for sc.i < len(code) && !(code[sc.i] == '*' && sc.i+1 < len(code) && code[sc.i+1] == '/') {
				if code[sc.i] == '\n' {
					sc.nl = true
				}
				sc.i++
			}
			sc.i += 2
		case c == '"' || c == '\'':
			sc.startToken(true)
			sc.skipString(c)
			sc.operand = true
		case c == '`':
			sc.startToken(true)
			sc.i++
			if err := sc.template(); err != nil {
				return err
			}
		case c == '/' && !sc.operand:
			sc.startToken(true)
			if err := sc.regexp(); err != nil {
				return err
			}
			sc.operand = true
		case c == '(' || c == '[' || c == '{':
			sc.startToken(c == '{')
			if err := sc.op(); err != nil {
				return err
			}
			sc.stack = append(sc.stack, shapeLevel{open: c})
			sc.i++
			if sc.total+len(sc.stack) > sc.max {
				return sc.tooDeep()
			}
		case c == ')' || c == ']' || c == '}':
			sc.startToken(false)
			sc.i++
			if len(sc.stack) > 1 {
				closing := sc.top()
				sc.total -= closing.ops
				wasTemplate := closing.open == '$'
				sc.stack = sc.stack[:len(sc.stack)-1]
				if wasTemplate && c == '}' {
					if err := sc.template(); err != nil {
						return err
					}
					continue
				}
			}
			sc.operand = true
		case c == ';':
			sc.startToken(false)
			sc.reset()
			sc.operand = false
			sc.i++
		case c == ',':
			sc.startToken(false)
			t := sc.top()
			commas := t.commas + 1
			sc.reset()
			t.commas = commas
			if t.open != '[' && commas > maxCommas {
				return fmt.Errorf("an expression near byte %d has more than %d comma-separated parts; use an array or several statements", sc.i, maxCommas)
			}
			sc.operand = false
			sc.i++
		case isWordByte(c):
			word := sc.word()
			op := opKeywords[word]
			sc.startToken(!op)
			if op {
				if err := sc.op(); err != nil {
					return err
				}
			} else {
				sc.operand = true
			}
		default:
			sc.startToken(false)
			_, size := utf8.DecodeRuneInString(code[sc.i:])
			sc.i += size
			w := 1
			if c == '=' && sc.i < len(code) && code[sc.i] == '>' {
				// esbuild takes cubic time on arrow chains (a=>a=>…):
				// 0.8 s at 500 levels.
				w = arrowWeight
				sc.i++
			}
			if err := sc.weighted(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// space skips one non-ASCII space or line terminator, if there is one.
func (sc *shapeScanner) space() bool {
	r, size := utf8.DecodeRuneInString(sc.code[sc.i:])
	switch {
	case r == '\u2028' || r == '\u2029':
		sc.nl = true
	case r == '\u00a0' || r == '\ufeff' || unicode.Is(unicode.Zs, r):
	default:
		return false
	}
	sc.i += size
	return true
}

// opKeywords are the keywords that nest what follows them.
var opKeywords = map[string]bool{
	"typeof": true, "void": true, "delete": true, "new": true, "await": true, "yield": true,
	"if": true, "else": true, "for": true, "while": true, "do": true, "with": true,
	"in": true, "instanceof": true, "of": true, "as": true, "satisfies": true, "keyof": true,
	"extends": true, "return": true, "throw": true, "case": true,
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c == '\\' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func (sc *shapeScanner) word() string {
	start := sc.i
	for sc.i < len(sc.code) {
		c := sc.code[sc.i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(sc.code[sc.i:])
			if r == '\u2028' || r == '\u2029' || r == '\u00a0' || r == '\ufeff' || unicode.Is(unicode.Zs, r) {
				break
			}
			sc.i += size
			continue
		}
		// Numbers: 1.5e+10 stays one word.
		if (c == '.' || ((c == '+' || c == '-') && (sc.code[sc.i-1]|0x20) == 'e')) && sc.code[start] >= '0' && sc.code[start] <= '9' {
			sc.i++
			continue
		}
		if !isWordByte(c) {
			break
		}
		sc.i++
	}
	return sc.code[start:sc.i]
}

func (sc *shapeScanner) skipString(quote byte) {
	sc.i++
	for sc.i < len(sc.code) {
		switch sc.code[sc.i] {
		case '\\':
			sc.i += 2
			continue
		case quote, '\n':
			sc.i++
			return
		}
		sc.i++
	}
}

// template scans template text up to the closing backquote or to a `${`,
// which opens a level like a bracket.
func (sc *shapeScanner) template() error {
	for sc.i < len(sc.code) {
		switch sc.code[sc.i] {
		case '\\':
			sc.i += 2
			continue
		case '`':
			sc.i++
			sc.operand = true
			return nil
		case '$':
			if sc.i+1 < len(sc.code) && sc.code[sc.i+1] == '{' {
				sc.i += 2
				if err := sc.op(); err != nil {
					return err
				}
				sc.stack = append(sc.stack, shapeLevel{open: '$'})
				sc.operand = false
				return nil
			}
		}
		sc.i++
	}
	return nil
}

// regexp skips a regular-expression literal. Its groups nest in the
// pattern compiler, so they count against the same bound.
func (sc *shapeScanner) regexp() error {
	sc.i++
	depth, inClass := 0, false
	for sc.i < len(sc.code) {
		switch c := sc.code[sc.i]; {
		case c == '\\':
			sc.i += 2
			continue
		case c == '\n':
			return nil
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			depth++
			if sc.total+len(sc.stack)+depth > sc.max {
				return sc.tooDeep()
			}
		case c == ')':
			depth--
		case c == '/':
			sc.i++
			for sc.i < len(sc.code) && isWordByte(sc.code[sc.i]) {
				sc.i++
			}
			return nil
		}
		sc.i++
	}
	return nil
}
