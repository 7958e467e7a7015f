package poison

import (
	"fmt"
	"strings"
	"unicode"
)

// confusables maps look-alike characters to the Latin letter or digit they
// imitate. It is a compact subset of Unicode's confusables.txt (UTS #39)
// covering what tool-name spoofing uses: the Cyrillic and Greek letters
// that render like Latin ones (upper and lower case), Latin look-alikes
// (dotless ı, ɡ, ɑ, ℓ), the digit/letter pairs 0/O and 1/l/I/|, and (in
// Skeleton) fullwidth ASCII U+FF01–U+FF5E and the multi-letter "rn" → "m",
// "vv" → "w". Anything else maps to itself, so a name in a script not
// listed here never collides by accident.
var confusables = map[rune]rune{
	// Cyrillic lower case
	'а': 'a', 'в': 'b', 'ԁ': 'd', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k',
	'ӏ': 'l', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'ԛ': 'q', 'г': 'r', 'ѕ': 's', 'т': 't', 'џ': 'u',
	'ѵ': 'v', 'ԝ': 'w', 'х': 'x', 'у': 'y', 'ү': 'y', 'с': 'c', 'ь': 'b', 'ɡ': 'g',
	// Cyrillic upper case
	'А': 'a', 'В': 'b', 'С': 'c', 'Е': 'e', 'Н': 'h', 'І': 'l', 'Ј': 'j', 'К': 'k', 'М': 'm', 'О': 'o',
	'Р': 'p', 'Ѕ': 's', 'Т': 't', 'Х': 'x', 'У': 'y', 'Ԝ': 'w', 'Ү': 'y',
	// Greek lower case
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'γ': 'y', 'ω': 'w', 'ϲ': 'c', 'ϳ': 'j',
	// Greek upper case
	'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'l', 'Κ': 'k', 'Μ': 'm', 'Ν': 'n', 'Ο': 'o',
	'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
	// Latin look-alikes and digits
	'ı': 'i', 'ɑ': 'a', 'ℓ': 'l', 'ǀ': 'l', '|': 'l', 'I': 'l', '1': 'l', '0': 'o', 'O': 'o',
	'‐': '-', '‑': '-', '‒': '-', '–': '-', '−': '-', '＿': '_',
}

// Skeleton returns the form two names share when they look alike: every
// confusable mapped to its Latin model, fullwidth forms to ASCII, then
// lower case, then "rn" → "m" and "vv" → "w".
func Skeleton(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 0xFF01 && r <= 0xFF5E {
			r -= 0xFEE0
		}
		if c, ok := confusables[r]; ok {
			r = c
		}
		b.WriteRune(unicode.ToLower(r))
	}
	s := b.String()
	s = strings.ReplaceAll(s, "rn", "m")
	return strings.ReplaceAll(s, "vv", "w")
}

// Names indexes tool names by skeleton to find look-alikes.
type Names struct {
	by map[string][]string // skeleton → "backend.tool"
}

// NewNames returns an empty index.
func NewNames() *Names { return &Names{by: map[string][]string{}} }

// Add indexes one tool.
func (n *Names) Add(backend, tool string) {
	k := Skeleton(tool)
	id := backend + "." + tool
	for _, have := range n.by[k] {
		if have == id {
			return
		}
	}
	n.by[k] = append(n.by[k], id)
}

// Lookalike reports whether tool, on backend, looks like another indexed
// tool with a different name. The finding falls on the name that is not
// its own skeleton (the one carrying the look-alike characters), so of
// "send_email" and "send_emaіl" (Cyrillic і) only the second is flagged.
// Two tools of the same name on different backends are namespaced apart
// and are not look-alikes.
func (n *Names) Lookalike(backend, tool string) (Finding, bool) {
	k := Skeleton(tool)
	if strings.ToLower(tool) == k {
		return Finding{}, false
	}
	for _, other := range n.by[k] {
		_, name, _ := strings.Cut(other, ".")
		if strings.EqualFold(name, tool) {
			continue // case alone: Get_ID and get_Id are the same to a reader
		}
		return Finding{Backend: backend, Subject: tool, Rule: RuleHomoglyph, Field: "name", Reason: reason(RuleHomoglyph),
			Excerpt: fmt.Sprintf("%+q looks like %s", tool, other)}, true
	}
	return Finding{}, false
}
