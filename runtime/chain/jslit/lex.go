package jslit

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is a token's kind.
type Kind int

// Token kinds.
const (
	EOF Kind = iota
	Ident
	String
	Number
	Punct
)

// Token is one lexical token.
type Token struct {
	Kind Kind
	// Text is the identifier name, the punctuator, or for a String the
	// decoded value encoded as a JSON string literal (lone surrogates kept as
	// \u escapes, as JSON.stringify writes them).
	Text string
	// Num is a Number's value.
	Num float64
	// NL reports a line terminator before the token, which decides
	// automatic semicolon insertion.
	NL bool
}

// Tokenize splits code into literal-subset tokens; ok is
// false at the first character outside them (template literals, regular
// expressions, operators, non-ASCII identifiers…).
func Tokenize(code string) ([]Token, bool) {
	if !utf8.ValidString(code) {
		return nil, false
	}
	var toks []Token
	nl := false
	for i := 0; ; {
		var ok bool
		if i, nl, ok = skipSpace(code, i, nl); !ok {
			return nil, false
		}
		if i >= len(code) {
			return append(toks, Token{Kind: EOF, NL: nl}), true
		}
		c := code[i]
		t := Token{NL: nl}
		nl = false
		switch {
		case isIdentStart(c):
			j := i + 1
			for j < len(code) && (isIdentStart(code[j]) || isDigit(code[j])) {
				j++
			}
			if j < len(code) && (code[j] == '\\' || code[j] >= utf8.RuneSelf) {
				return nil, false
			}
			t.Kind, t.Text, i = Ident, code[i:j], j
		case isDigit(c) || (c == '.' && i+1 < len(code) && isDigit(code[i+1])):
			if t.Num, i, ok = scanNumber(code, i); !ok {
				return nil, false
			}
			t.Kind = Number
		case c == '"' || c == '\'':
			var buf bytes.Buffer
			if i, ok = scanString(code, i, &buf); !ok {
				return nil, false
			}
			t.Kind, t.Text = String, buf.String()
		case strings.IndexByte(".()[]{},:;=-+", c) >= 0:
			// Refuse the longer operators these characters start (`==`, `=>`,
			// `--`, `-=`, `++`, `+=`, `...`) rather than misread them.
			if i+1 < len(code) && strings.Contains(longOps[c], code[i+1:i+2]) {
				return nil, false
			}
			t.Kind, t.Text, i = Punct, code[i:i+1], i+1
		default:
			return nil, false
		}
		toks = append(toks, t)
	}
}

// longOps maps a punctuator to the characters that would extend it into a
// longer operator.
var longOps = map[byte]string{'=': "=>", '-': "-=", '+': "+=", '.': "."}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipSpace skips whitespace and comments, reporting whether a line
// terminator was crossed.
func skipSpace(code string, i int, nl bool) (int, bool, bool) {
	for i < len(code) {
		r, size := utf8.DecodeRuneInString(code[i:])
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			nl = true
			i += size
		case r == '\t' || r == '\v' || r == '\f' || r == ' ' || r == '\u00a0' || r == '\ufeff' || unicode.Is(unicode.Zs, r):
			i += size
		case strings.HasPrefix(code[i:], "//"):
			j := strings.IndexAny(code[i:], "\n\r\u2028\u2029")
			if j < 0 {
				return len(code), nl, true
			}
			i += j
		case strings.HasPrefix(code[i:], "/*"):
			j := strings.Index(code[i+2:], "*/")
			if j < 0 {
				return 0, false, false
			}
			if strings.ContainsAny(code[i+2:i+2+j], "\n\r\u2028\u2029") {
				nl = true
			}
			i += j + 4
		default:
			return i, nl, true
		}
	}
	return i, nl, true
}

// scanNumber reads a JS numeric literal and returns its value. Legacy
// octals and BigInts are refused.
func scanNumber(code string, i int) (float64, int, bool) {
	start := i
	base := 10
	if code[i] == '0' && i+1 < len(code) {
		switch code[i+1] | 0x20 {
		case 'x':
			base = 16
		case 'o':
			base = 8
		case 'b':
			base = 2
		default:
			if isDigit(code[i+1]) || code[i+1] == '_' {
				return 0, 0, false
			}
		}
	}
	var digits strings.Builder
	var v float64
	if base != 10 {
		i += 2
		j, ok := scanDigits(code, i, base, &digits)
		if !ok || j == i {
			return 0, 0, false
		}
		n, ok := new(big.Int).SetString(digits.String(), base)
		if !ok {
			return 0, 0, false
		}
		v, _ = new(big.Float).SetInt(n).Float64()
		i = j
	} else {
		j, ok := scanDigits(code, i, 10, &digits)
		if !ok {
			return 0, 0, false
		}
		if j < len(code) && code[j] == '.' {
			digits.WriteByte('.')
			if j, ok = scanDigits(code, j+1, 10, &digits); !ok {
				return 0, 0, false
			}
		}
		if j < len(code) && code[j]|0x20 == 'e' {
			digits.WriteByte('e')
			j++
			if j < len(code) && (code[j] == '+' || code[j] == '-') {
				digits.WriteByte(code[j])
				j++
			}
			k, ok := scanDigits(code, j, 10, &digits)
			if !ok || k == j {
				return 0, 0, false
			}
			j = k
		}
		if j == start {
			return 0, 0, false
		}
		var err error
		// Out-of-range values keep ParseFloat's ±Inf or 0, the values JS
		// gives them; callers decide whether Infinity is acceptable.
		if v, err = strconv.ParseFloat(digits.String(), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, 0, false
		}
		i = j
	}
	// `1n` is a BigInt; `3in`, `1.toString` and friends are not plain literals.
	if i < len(code) && (isIdentStart(code[i]) || isDigit(code[i]) || code[i] == '\\' || code[i] == '.') {
		return 0, 0, false
	}
	return v, i, true
}

// scanDigits copies digits of base into out, dropping numeric separators
// that sit between two digits.
func scanDigits(code string, i, base int, out *strings.Builder) (int, bool) {
	isD := func(c byte) bool {
		d := -1
		switch {
		case isDigit(c):
			d = int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			d = int(c|0x20-'a') + 10
		}
		return d >= 0 && d < base
	}
	start := i
	for i < len(code) {
		switch c := code[i]; {
		case isD(c):
			out.WriteByte(c)
		case c == '_':
			if i == start || i+1 >= len(code) || !isD(code[i-1]) || !isD(code[i+1]) {
				return 0, false
			}
		default:
			return i, true
		}
		i++
	}
	return i, true
}

// scanString decodes a quoted JS string starting at code[i] and writes it
// to out as a JSON string.
func scanString(code string, i int, out *bytes.Buffer) (int, bool) {
	quote := code[i]
	i++
	var units []uint16
	for {
		if i >= len(code) {
			return 0, false
		}
		c := code[i]
		switch {
		case c == quote:
			writeJSONString(out, units)
			return i + 1, true
		case c == '\n' || c == '\r':
			return 0, false
		case c == '\\':
			var ok bool
			if units, i, ok = scanEscape(code, i+1, units); !ok {
				return 0, false
			}
		default:
			r, size := utf8.DecodeRuneInString(code[i:])
			units = utf16.AppendRune(units, r)
			i += size
		}
	}
}

func scanEscape(code string, i int, units []uint16) ([]uint16, int, bool) {
	if i >= len(code) {
		return nil, 0, false
	}
	c := code[i]
	simple := map[byte]uint16{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f', 'v': '\v', '\'': '\'', '"': '"', '\\': '\\'}
	if u, ok := simple[c]; ok {
		return append(units, u), i + 1, true
	}
	switch {
	case c == '0':
		if i+1 < len(code) && isDigit(code[i+1]) {
			return nil, 0, false
		}
		return append(units, 0), i + 1, true
	case isDigit(c):
		// Octal escapes and \8, \9 are errors in strict mode.
		return nil, 0, false
	case c == 'x':
		if i+3 > len(code) {
			return nil, 0, false
		}
		n, err := strconv.ParseUint(code[i+1:i+3], 16, 8)
		if err != nil {
			return nil, 0, false
		}
		return append(units, uint16(n)), i + 3, true
	case c == 'u':
		if i+1 < len(code) && code[i+1] == '{' {
			j := strings.IndexByte(code[i+2:], '}')
			if j < 1 || j > 8 {
				return nil, 0, false
			}
			n, err := strconv.ParseUint(code[i+2:i+2+j], 16, 32)
			if err != nil || n > unicode.MaxRune {
				return nil, 0, false
			}
			return utf16.AppendRune(units, rune(n)), i + 3 + j, true
		}
		if i+5 > len(code) {
			return nil, 0, false
		}
		n, err := strconv.ParseUint(code[i+1:i+5], 16, 16)
		if err != nil || strings.ContainsAny(code[i+1:i+5], "+-") {
			return nil, 0, false
		}
		return append(units, uint16(n)), i + 5, true
	case c == '\r':
		if i+1 < len(code) && code[i+1] == '\n' {
			return units, i + 2, true
		}
		return units, i + 1, true
	case c == '\n':
		return units, i + 1, true
	}
	r, size := utf8.DecodeRuneInString(code[i:])
	if r == '\u2028' || r == '\u2029' {
		return units, i + size, true
	}
	return utf16.AppendRune(units, r), i + size, true
}

// writeJSONString encodes UTF-16 code units the way JSON.stringify does,
// escaping lone surrogates.
func writeJSONString(buf *bytes.Buffer, units []uint16) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u == '"':
			buf.WriteString(`\"`)
		case u == '\\':
			buf.WriteString(`\\`)
		case u == '\b':
			buf.WriteString(`\b`)
		case u == '\f':
			buf.WriteString(`\f`)
		case u == '\n':
			buf.WriteString(`\n`)
		case u == '\r':
			buf.WriteString(`\r`)
		case u == '\t':
			buf.WriteString(`\t`)
		case u < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hex[u>>4])
			buf.WriteByte(hex[u&0xf])
		case utf16.IsSurrogate(rune(u)):
			if u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000 {
				buf.WriteRune(utf16.DecodeRune(rune(u), rune(units[i+1])))
				i++
				continue
			}
			buf.WriteString(`\u`)
			for s := 12; s >= 0; s -= 4 {
				buf.WriteByte(hex[(u>>s)&0xf])
			}
		default:
			buf.WriteRune(rune(u))
		}
	}
	buf.WriteByte('"')
}

// FormatNumber formats a finite float64 as ECMAScript Number::toString does,
// the digits JSON.stringify writes. f must be finite.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if f < 0 {
		return "-" + FormatNumber(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := strconv.Itoa(int(math.Abs(float64(n - 1))))
	if k == 1 {
		return digits + "e" + sign + abs
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + abs
}
