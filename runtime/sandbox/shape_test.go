package sandbox

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckShape(t *testing.T) {
	var many strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&many, "const v%d = await exa.search({q: \"item %d\", n: %d})\n", i, i, i)
	}
	var data strings.Builder
	data.WriteString("const rows = [\n")
	for i := range 5000 {
		fmt.Fprintf(&data, "  {id: %d, name: \"row %d\", tags: [\"a\", \"b\"], nested: {ok: true, score: %d.5}},\n", i, i, i)
	}
	data.WriteString("];\nreturn rows.length")
	var props strings.Builder
	props.WriteString("const o = {")
	for i := range 1500 {
		fmt.Fprintf(&props, "k%d: %d, ", i, i)
	}
	props.WriteString("};")
	concat := "const s = " + strings.Repeat(`"part" + x + `, 150) + `"end";`
	callbacks := "a(() => {\n" + strings.Repeat("b(function () {\n", 40) + "return 1\n" + strings.Repeat("})\n", 40) + "})"
	fluent := "return list" + strings.Repeat("\n  .map(x => x + 1)\n  .filter(x => x > 0)", 60)
	elseIf := "if (a) {}" + strings.Repeat(" else if (x === 1 && y !== 2) { n++ }", 200)
	regex := `const re = /^(?:[a-z0-9!#$%&'*+/=?^_{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_{|}~-]+)*)@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+$/;`
	ok := map[string]string{
		"many statements":        many.String(),
		"data literal":           data.String(),
		"object of 1500 keys":    props.String(),
		"long concatenation":     concat,
		"nested callbacks":       callbacks,
		"fluent chain":           fluent,
		"else-if chain":          elseIf,
		"regex literal":          regex,
		"template nesting":       "const t = `a ${b ? `c ${d} e` : `f`} g ${[1, 2].map(x => `${x}`).join()}`",
		"division and regex":     "const r = a / b / c; const m = /x\\/y/g.exec(s); return r / 2",
		"comments and strings":   "// ((((\n/* [[[[ */ const s = '(((' + \"{{{\" + `[[[`;",
		"no semicolons":          strings.Repeat("const x = a + b * c - d\nfoo(x)\n", 2000),
		"unicode identifiers":    "const café = 1; const π = café * 2; return π",
		"line separators":        "const a = 1\u2028const b = 2\u2029return a + b",
		"typescript annotations": "type T = {a: Array<Map<string, number>>}; const f = <U,>(x: U): U => x; return f<T>({a: []})",
	}
	for name, code := range ok {
		t.Run(name, func(t *testing.T) {
			if err := checkShape(code, 1<<20, 1000); err != nil {
				t.Fatalf("checkShape refused legitimate code: %v", err)
			}
		})
	}
	bad := map[string]string{
		"parens":      strings.Repeat("(", 1200) + "1" + strings.Repeat(")", 1200),
		"unary":       "x = " + strings.Repeat("!", 1200) + "1",
		"members":     "x = a" + strings.Repeat(".b", 1200),
		"calls":       "x = a" + strings.Repeat("()", 1200),
		"arrows":      "f = " + strings.Repeat("a=>", 300) + "c",
		"ternaries":   "x = " + strings.Repeat("a?b:", 600) + "c",
		"if chain":    strings.Repeat("if(a)", 600) + "c",
		"templates":   "x = " + strings.Repeat("`${", 600) + "1" + strings.Repeat("}`", 600),
		"assignments": strings.Repeat("a=", 1200) + "c",
		"sequence":    "l: {" + strings.Repeat("a,", 2500) + "a}",
		"regex nest":  "x = /" + strings.Repeat("(", 1200) + "a" + strings.Repeat(")", 1200) + "/",
		"lines":       "x = a" + strings.Repeat("\n.b", 1200),
		"nested obj":  "x = " + strings.Repeat("{a:", 1200) + "1" + strings.Repeat("}", 1200),
	}
	for name, code := range bad {
		t.Run(name, func(t *testing.T) {
			if err := checkShape(code, 1<<20, 1000); err == nil {
				t.Fatalf("checkShape accepted a %d-byte bomb", len(code))
			}
		})
	}
	if err := checkShape(strings.Repeat(" ", 2048), 1024, 1000); err == nil || !strings.Contains(err.Error(), "limit is 1024") {
		t.Fatalf("size limit: %v", err)
	}
}

// FuzzCheckShape: the pre-scan must terminate on any input, never panic,
// and refuse whatever nests past the bound when counted exactly.
func FuzzCheckShape(f *testing.F) {
	for _, s := range []string{"a(b[c{d}])", "`${`${x}`}`", "/re(g)/.test(x) / 2", "'\\'' + \"\\\"\"", "a\u2028b\u00a0c", "x=>y=>z", "\xff\xfe("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		err := checkShape(code, 1<<16, 50)
		depth, deepest := 0, 0
		for _, c := range code {
			switch c {
			case '(', '[', '{':
				depth++
				deepest = max(deepest, depth)
			case ')', ']', '}':
				depth--
			}
		}
		// Without strings, comments, templates or regexes, brackets alone
		// must stay within the bound.
		if err == nil && !strings.ContainsAny(code, "'\"`/\\") && deepest > 50 {
			t.Fatalf("accepted %d nested brackets", deepest)
		}
	})
}
