package search

// stemPlural is Harman's S-stemmer ("How effective is suffixing?", JASIS
// 1991): it folds only plurals, so it never merges words of different
// meaning the way a full stemmer can ("news" stays "news").
func stemPlural(b []byte) []byte {
	n := len(b)
	if n < 3 || !isASCII(b) || b[n-1] != 's' {
		return b
	}
	switch {
	case hasSuffix(b, "ies") && !hasSuffix(b, "eies") && !hasSuffix(b, "aies"):
		b = append(b[:n-3], 'y')
	case hasSuffix(b, "es") && !hasSuffix(b, "aes") && !hasSuffix(b, "ees") && !hasSuffix(b, "oes"):
		b = b[:n-1]
	case !hasSuffix(b, "us") && !hasSuffix(b, "ss"):
		b = b[:n-1]
	}
	return b
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}

// stemPorter is M. F. Porter's 1980 algorithm, transcribed from his reference
// C implementation. Words of two letters or fewer and non-ASCII words are
// left alone.
func stemPorter(b []byte) []byte {
	if len(b) <= 2 || !isASCII(b) {
		return b
	}
	p := porter{b: b, k: len(b) - 1}
	p.step1ab()
	if p.k > 0 {
		p.step1c()
		p.step2()
		p.step3()
		p.step4()
		p.step5()
	}
	return p.b[:p.k+1]
}

// stemLight is Porter's inflectional steps alone: step 1 (plurals, -ed,
// -ing) and step 5 (a final -e, so "searches", "create" and "created" meet
// "search" and "creat"), without the derivational steps 2-4 that merge
// words of different meaning ("general", "generation" → "gener").
func stemLight(b []byte) []byte {
	if len(b) <= 2 || !isASCII(b) {
		return b
	}
	p := porter{b: b, k: len(b) - 1}
	p.step1ab()
	if p.k > 0 {
		p.step1c()
		p.step5()
	}
	return p.b[:p.k+1]
}

// porter holds the word being stemmed: b[0..k] is the current stem and j
// the end of the stem a matched suffix leaves.
type porter struct {
	b    []byte
	k, j int
}

func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !p.cons(i-1)
	}
	return true
}

// m counts the vowel-consonant sequences in b[0..j].
func (p *porter) m() int {
	n, i := 0, 0
	for ; ; i++ {
		if i > p.j {
			return n
		}
		if !p.cons(i) {
			break
		}
	}
	i++
	for {
		for ; ; i++ {
			if i > p.j {
				return n
			}
			if p.cons(i) {
				break
			}
		}
		i++
		n++
		for ; ; i++ {
			if i > p.j {
				return n
			}
			if !p.cons(i) {
				break
			}
		}
		i++
	}
}

func (p *porter) vowelInStem() bool {
	for i := 0; i <= p.j; i++ {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

func (p *porter) doubleC(j int) bool {
	return j >= 1 && p.b[j] == p.b[j-1] && p.cons(j)
}

// cvc reports consonant-vowel-consonant ending at i where the last consonant
// is not w, x or y: the stem of a short word like "hop" or "fil".
func (p *porter) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	c := p.b[i]
	return c != 'w' && c != 'x' && c != 'y'
}

func (p *porter) ends(s string) bool {
	l := len(s)
	if l > p.k+1 || string(p.b[p.k+1-l:p.k+1]) != s {
		return false
	}
	p.j = p.k - l
	return true
}

func (p *porter) setTo(s string) {
	p.b = append(p.b[:p.j+1], s...)
	p.k = p.j + len(s)
}

func (p *porter) r(s string) {
	if p.m() > 0 {
		p.setTo(s)
	}
}

// step1ab removes plurals and -ed or -ing.
func (p *porter) step1ab() {
	if p.b[p.k] == 's' {
		switch {
		case p.ends("sses"):
			p.k -= 2
		case p.ends("ies"):
			p.setTo("i")
		case p.k >= 1 && p.b[p.k-1] != 's':
			p.k--
		}
	}
	if p.ends("eed") {
		if p.m() > 0 {
			p.k--
		}
		return
	}
	if (p.ends("ed") || p.ends("ing")) && p.vowelInStem() {
		p.k = p.j
		switch {
		case p.ends("at"):
			p.setTo("ate")
		case p.ends("bl"):
			p.setTo("ble")
		case p.ends("iz"):
			p.setTo("ize")
		case p.doubleC(p.k):
			p.k--
			if c := p.b[p.k]; c == 'l' || c == 's' || c == 'z' {
				p.k++
			}
		default:
			p.j = p.k
			if p.m() == 1 && p.cvc(p.k) {
				p.setTo("e")
			}
		}
	}
}

// step1c turns a terminal y into i when there is another vowel in the stem.
func (p *porter) step1c() {
	if p.ends("y") && p.vowelInStem() {
		p.b[p.k] = 'i'
	}
}

// porterStep2 maps double suffixes to single ones, keyed by the
// penultimate letter as in the reference implementation.
var porterStep2 = map[byte][][2]string{
	'a': {{"ational", "ate"}, {"tional", "tion"}},
	'c': {{"enci", "ence"}, {"anci", "ance"}},
	'e': {{"izer", "ize"}},
	'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}},
	'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
	's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
	't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	'g': {{"logi", "log"}},
}

func (p *porter) step2() {
	p.replaceFirst(porterStep2[p.b[p.k-1]])
}

var porterStep3 = map[byte][][2]string{
	'e': {{"icate", "ic"}, {"ative", ""}, {"alize", "al"}},
	'i': {{"iciti", "ic"}},
	'l': {{"ical", "ic"}, {"ful", ""}},
	's': {{"ness", ""}},
}

func (p *porter) step3() {
	p.replaceFirst(porterStep3[p.b[p.k]])
}

func (p *porter) replaceFirst(rules [][2]string) {
	for _, rule := range rules {
		if p.ends(rule[0]) {
			p.r(rule[1])
			return
		}
	}
}

var porterStep4 = map[byte][]string{
	'a': {"al"},
	'c': {"ance", "ence"},
	'e': {"er"},
	'i': {"ic"},
	'l': {"able", "ible"},
	'n': {"ant", "ement", "ment", "ent"},
	'o': {"ion", "ou"},
	's': {"ism"},
	't': {"ate", "iti"},
	'u': {"ous"},
	'v': {"ive"},
	'z': {"ize"},
}

// step4 removes -ant, -ence and the like in context <c>vcvc<v>.
func (p *porter) step4() {
	if p.k < 1 {
		return
	}
	matched := false
	for _, s := range porterStep4[p.b[p.k-1]] {
		if !p.ends(s) {
			continue
		}
		if s == "ion" && (p.j < 0 || p.b[p.j] != 's' && p.b[p.j] != 't') {
			continue
		}
		matched = true
		break
	}
	if matched && p.m() > 1 {
		p.k = p.j
	}
}

// step5 removes a final -e and turns -ll into -l when m() > 1.
func (p *porter) step5() {
	p.j = p.k
	if p.b[p.k] == 'e' {
		a := p.m()
		if a > 1 || a == 1 && !p.cvc(p.k-1) {
			p.k--
		}
	}
	if p.b[p.k] == 'l' && p.doubleC(p.k) && p.m() > 1 {
		p.k--
	}
}
