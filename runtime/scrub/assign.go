package scrub

import (
	"strings"
	"unicode/utf8"
)

// nameClass says how strongly an assignment's name implies a secret value.
type nameClass uint8

const (
	notSecret nameClass = iota
	// weakName: KEY, TOKEN, AUTH and PASS names, which also label sort keys,
	// pagination tokens and auth methods, so the value must look random.
	weakName
	// strongName: PASSWORD, SECRET, CREDENTIAL, AUTHORIZATION names, whose
	// value is a secret whatever it looks like.
	strongName
)

// SecretName reports whether a variable, header or field called name holds
// a secret by the same rules the scrubber applies to NAME=value text, so the
// config can decide which env and header values to pass as Options.Values.
func SecretName(name string) bool {
	c, _ := classifyName(name)
	return c != notSecret
}

// Word lists for classifyName, all lower case. A name is split into words
// at punctuation and camelCase humps: "nextPageToken" is next, page, token.
var (
	// strongSuffixes end a word that always names a secret.
	strongSuffixes = []string{"password", "passwd", "passphrase", "secret", "credential", "credentials", "authorization", "pwd"}
	// weakSuffixes end a last word that names a secret if the value looks
	// like one.
	weakSuffixes = []string{"token", "apikey", "accesskey", "secretkey", "privatekey"}
	// benignLast are last words that make the name describe a secret rather
	// than hold one: password_length, token_count, secret_name, key_id.
	benignLast = setOf("id", "ids", "count", "length", "len", "size", "type", "types", "name", "names",
		"path", "file", "filename", "dir", "url", "uri", "urls", "endpoint", "hint", "policy", "format",
		"expiry", "expires", "expiration", "exp", "ttl", "age", "at", "in", "header", "field", "fields",
		"env", "var", "prefix", "suffix", "version", "enabled", "enable", "disabled", "required", "mode",
		"method", "provider", "source", "location", "algorithm", "alg", "kind", "label", "rotation",
		"created", "updated", "description", "desc", "help", "regex", "pattern", "store", "manager",
		"ref", "arn", "usage", "limit", "min", "max", "scope", "scopes", "strength", "reset", "status",
		"valid", "validation", "error", "errors", "message", "template", "options", "schema", "rules",
		"timeout", "interval", "lifetime", "duration", "budget", "estimate", "index")
	// defusing words turn a weak name harmless: nextPageToken is a
	// pagination cursor the model needs, max_tokens a number, sort_key a
	// column name, public_key public, GPG_KEY (set by the python images) a
	// fingerprint.
	defusing = setOf("page", "next", "continuation", "cursor", "sort", "primary", "foreign", "partition",
		"hash", "range", "cache", "public", "max", "min", "num", "input", "output", "prompt",
		"completion", "total", "usage", "idempotency", "dedup", "lookup", "unique", "sync", "row", "map",
		"gpg", "fingerprint")
	// placeholders are values that stand in for a secret rather than being
	// one: redacting them only costs the reader context.
	placeholders = setOf("null", "nil", "none", "undefined", "true", "false", "yes", "no", "on", "off",
		"string", "str", "int", "bool", "boolean", "number", "required", "optional", "redacted",
		"hidden", "masked", "omitted", "empty", "n/a", "na", "tbd", "todo", "unset", "[]", "{}")
	placeholderPrefixes = []string{"$", "<", "{{", "%(", "%{", "[REDACTED", "process.env", "os.environ", "os.getenv", "secrets."}
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// classifyName decides whether an assignment to name holds a secret, and
// whether it is an AWS secret access key.
func classifyName(name string) (c nameClass, aws bool) {
	if len(name) == 0 || len(name) > 64 || !hasRoot(name) {
		return notSecret, false
	}
	lower := strings.ToLower(name)
	if lower == "pwd" || lower == "oldpwd" {
		return notSecret, false // the shell's working directory
	}
	var buf [16]string
	words := splitWords(name, lower, buf[:])
	if len(words) == 0 || benignLast[words[len(words)-1]] {
		return notSecret, false
	}
	var strong, defused, awsWord bool
	for _, w := range words {
		strong = strong || hasAnySuffix(w, strongSuffixes)
		defused = defused || defusing[w]
		awsWord = awsWord || w == "aws"
	}
	if strong {
		aws = strings.Contains(strings.Join(words, ""), "secretaccesskey") || awsWord && strings.Contains(lower, "secret")
		return strongName, aws
	}
	if defused || strings.Contains(lower, "page") {
		return notSecret, false
	}
	last := words[len(words)-1]
	if last == "key" && len(words) > 1 || last == "auth" || last == "pass" || hasAnySuffix(last, weakSuffixes) {
		return weakName, false
	}
	return notSecret, false
}

// hasRoot is classifyName's fast reject: most names on a ':' or '=' (times,
// URLs, JSON keys) contain none of these roots, in any case.
func hasRoot(name string) bool {
	for j := 0; j+3 <= len(name); j++ {
		var ok bool
		switch name[j] | 0x20 {
		case 'k':
			ok = foldAt(name, j, "key")
		case 't':
			ok = foldAt(name, j, "token")
		case 's':
			ok = foldAt(name, j, "secret")
		case 'p':
			ok = foldAt(name, j, "pass") || foldAt(name, j, "pwd")
		case 'c':
			ok = foldAt(name, j, "credential")
		case 'a':
			ok = foldAt(name, j, "auth")
		}
		if ok {
			return true
		}
	}
	return false
}

// foldAt reports whether s[j:] starts with the lower-case letters w in any
// case. c|0x20 equals a lower-case letter only for that letter in either
// case, so no other byte can match.
func foldAt(s string, j int, w string) bool {
	if len(s)-j < len(w) {
		return false
	}
	for k := 0; k < len(w); k++ {
		if s[j+k]|0x20 != w[k] {
			return false
		}
	}
	return true
}

// splitWords splits name at non-alphanumerics and at a lower-case letter or
// digit followed by an upper-case one, returning lower-case words taken
// from lower.
func splitWords(name, lower string, buf []string) []string {
	words := buf[:0]
	start := -1
	for i := 0; i <= len(name); i++ {
		if i == len(name) || !alnum[name[i]] {
			if start >= 0 {
				words = append(words, lower[start:i])
				start = -1
			}
			continue
		}
		if start >= 0 && 'A' <= name[i] && name[i] <= 'Z' && !('A' <= name[i-1] && name[i-1] <= 'Z') {
			words = append(words, lower[start:i])
			start = i
		}
		if start < 0 {
			start = i
		}
	}
	return words
}

func hasAnySuffix(w string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

// equalsAssignment handles the '=' at i: NAME=value, NAME = value,
// NAME := value and "name" => value, but not ==, !=, <= or >=.
func equalsAssignment(s string, i int, m *memo) (span, bool) {
	if i+1 < len(s) && s[i+1] == '=' {
		return span{}, false
	}
	nameEnd := i
	if i > 0 {
		switch s[i-1] {
		case '=', '!', '<', '>':
			return span{}, false
		case ':':
			nameEnd = i - 1
		}
	}
	sepEnd := i + 1
	if sepEnd < len(s) && s[sepEnd] == '>' {
		sepEnd++
	}
	return assignmentAt(s, nameEnd, sepEnd, false, m)
}

// colonAssignment handles the ':' at i: NAME: value and "name": "value".
func colonAssignment(s string, i int, m *memo) (span, bool) {
	if i+1 < len(s) && (s[i+1] == '=' || s[i+1] == ':') {
		return span{}, false // := is handled at its '=', :: is a path
	}
	// Times (09:12:44) are the most common colon in logs and JSON; no
	// assignment in any format we parse puts two digits right before the
	// colon and a digit right after it.
	if i >= 2 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i-2]) && isDigit(s[i+1]) {
		return span{}, false
	}
	return assignmentAt(s, i, i+1, true, m)
}

// assignmentAt checks the name ending before s[sepStart] and the value
// starting at s[sepEnd].
func assignmentAt(s string, sepStart, sepEnd int, colon bool, m *memo) (span, bool) {
	name, start, ok := nameBefore(s, sepStart)
	if !ok {
		return span{}, false
	}
	c, aws := classifyName(name)
	if c == notSecret {
		return span{}, false
	}
	// A bare name right after a quote sits inside a quoted string, as in
	// curl -H "X-Api-Key: value": the value ends where that string does.
	var stop byte
	if start > 0 && (s[start-1] == '"' || s[start-1] == '\'') {
		stop = s[start-1]
	}
	limit := maxRun
	if m.valueBudget <= 0 {
		limit = degradedRun
	}
	vs, ve, quoted, ok := valueAfter(s, sepEnd, colon, stop, limit)
	m.valueBudget -= ve - vs
	if !ok {
		return span{}, false
	}
	rs, re, k, ok := valueSpan(s[vs:ve], c, aws, quoted)
	return span{vs + rs, vs + re, k}, ok
}

// nameBefore returns the name that ends at s[end], skipping spaces: a run of
// name characters, or a quoted name ("name", 'name' or \"name\" inside
// JSON-encoded text). start is where a bare name begins, or -1 for a
// quoted one.
func nameBefore(s string, end int) (name string, start int, ok bool) {
	j := end
	for sp := 0; j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') && sp < 8; sp++ {
		j--
	}
	if j == 0 {
		return "", -1, false
	}
	if q := s[j-1]; q == '"' || q == '\'' {
		// Text quoted more than once (JSON inside a Go %q) escapes the
		// quote with a run of backslashes.
		closeQ := j - 1
		escaped := false
		for closeQ > 0 && s[closeQ-1] == '\\' {
			closeQ--
			escaped = true
		}
		lim := max(0, closeQ-64)
		open := strings.LastIndexByte(s[lim:closeQ], q)
		if open < 0 {
			return "", -1, false
		}
		open += lim
		if escaped && (open == 0 || s[open-1] != '\\') {
			return "", -1, false
		}
		name := s[open+1 : closeQ]
		for i := 0; i < len(name); i++ {
			if c := name[i]; c == '\n' || c == '\r' || c == '\\' {
				return "", -1, false
			}
		}
		return name, -1, name != ""
	}
	k := j
	for k > 0 && j-k <= 64 && nameChars[s[k-1]] {
		k--
	}
	// The letter of an escape such as \n in JSON-encoded text is not part
	// of the name: "…\nAPI_KEY=…" names API_KEY.
	if k > 0 && s[k-1] == '\\' && k < j {
		k++
	}
	return s[k:j], k, k < j
}

// Value terminators. After '=' (shell, env, URL query, logfmt) a value ends
// at whitespace or punctuation; after ':' (YAML, HTTP headers) it runs to
// the end of the line, so "password: two words" loses both, or to a ',',
// ';', '}' or ']' that closes a flow-style YAML or inline object. A
// backslash ends both because in JSON-encoded text it starts the \n or \"
// that closes the value.
var (
	eqDelim    = class("\x00-\x20,;&\"'`)]}<>|\\([")
	colonDelim = class("\n\r,;}]\\")
)

// valueAfter returns the bounds of the value starting at s[start], without
// its quotes. A non-zero stop also ends an unquoted value; so does limit,
// maxRun or less, counted from the value's first byte.
func valueAfter(s string, start int, colon bool, stop byte, limit int) (vs, ve int, quoted, ok bool) {
	v := start
	for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
		v++
	}
	if v >= len(s) {
		return 0, 0, false, false
	}
	s = s[:min(len(s), v+limit)]
	switch q := s[v]; {
	case q == '"' || q == '\'' || q == '`':
		return v + 1, closingQuote(s, v+1, q), true, true
	case q == '\\':
		// \" opens a value in JSON-encoded text; \\\" and longer runs
		// in text encoded again. The value ends at the same run.
		n := 1
		for v+n < len(s) && s[v+n] == '\\' {
			n++
		}
		if v+n < len(s) && s[v+n] == '"' {
			start := v + n + 1
			e := start + lineEnd(s[start:])
			if c := strings.Index(s[start:e], s[v:v+n+1]); c >= 0 {
				e = start + c
			}
			return start, e, true, true
		}
	}
	e := v
	if colon {
		// A quote inside an unquoted value closes the string the whole
		// assignment sits in: `err="…\n    X-Api-Key: 4b32…" retry=1s`.
		for e < len(s) && !colonDelim[s[e]] && s[e] != stop && s[e] != '"' {
			e++
		}
		if h := strings.Index(s[v:e], " #"); h >= 0 {
			e = v + h
		}
		for e > v && (s[e-1] == ' ' || s[e-1] == '\t') {
			e--
		}
	} else {
		for e < len(s) && !eqDelim[s[e]] {
			e++
		}
		if e < len(s) && (s[e] == '(' || s[e] == '[') {
			return 0, 0, false, false // code: password = getpass(), key = os.environ[…]
		}
	}
	return v, e, false, e > v
}

// closingQuote returns the index of the quote q that closes a value opened
// just before s[i], honouring backslash escapes in double-quoted values;
// an unclosed value runs to the end of the line.
func closingQuote(s string, i int, q byte) int {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case q:
			return j
		case '\\':
			if q == '"' {
				j++
			}
		case '\n', '\r':
			return j
		}
	}
	return len(s)
}

func lineEnd(s string) int {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return i
	}
	return len(s)
}

// authSchemes prefix header values; the scheme word stays readable.
var authSchemes = []struct {
	word string
	k    kind
}{{"bearer", kindBearer}, {"basic", kindBasicAuth}, {"token", kindAssignment}, {"bot", kindAssignment}}

// valueSpan decides whether v, the value assigned to a name of class c,
// is a secret, and returns the part of v to redact.
//
// Strong names redact any value of three bytes or more that is not a
// placeholder: short passwords are still passwords, and a placeholder such
// as "${DB_PASSWORD}" or "<your-password>" tells the reader nothing secret.
// One- and two-byte values are flags and stubs ("-", "no"), not secrets.
// Weak names redact only values that look like generated tokens.
func valueSpan(v string, c nameClass, aws, quoted bool) (start, end int, k kind, ok bool) {
	k = kindAssignment
	if aws {
		k = kindAWSSecret
	}
	for _, sch := range authSchemes {
		if n := len(sch.word); len(v) > n+1 && strings.EqualFold(v[:n], sch.word) && (v[n] == ' ' || v[n] == '\t') {
			start = n
			for start < len(v) && (v[start] == ' ' || v[start] == '\t') {
				start++
			}
			if c != strongName && strings.ContainsAny(strings.TrimRight(v[start:], " \t"), " \t") {
				// Words after the scheme under a weak name (auth="bearer
				// token required") are prose about auth: a credential
				// (RFC 9110 token68) has no spaces. The name's own class
				// decides. An Authorization header keeps the strict rule.
				start = 0
				break
			}
			if sch.k != kindAssignment {
				k = sch.k
			}
			c = strongName // a credential after an auth scheme is never a word
			break
		}
	}
	end = len(v)
	for end > start && (v[end-1] == ' ' || v[end-1] == '\t') {
		end--
	}
	val := v[start:end]
	if val == "" || !quoted && start == 0 && strings.IndexByte("{[|>&*!", val[0]) >= 0 {
		return 0, 0, 0, false // a YAML block, anchor, alias or tag, or a nested object
	}
	if placeholder(val) || pathLike(val) {
		return 0, 0, 0, false
	}
	switch c {
	case strongName:
		// An unquoted value that reads as a sentence is prose about a
		// secret ("secret: the meeting moved", "Run passwd: it changes
		// it"), not one; a quoted value was written as a value.
		ok = len(val) >= 3 && (quoted || !prose(val))
	case weakName:
		ok = randomToken(val)
	}
	return start, end, k, ok
}

// randomToken reports whether v looks generated rather than written: token
// characters only, and either a letter-digit mix of 12 bytes or more or a
// mixed-case run of 20 bytes or more. Every vendor key format we know is
// longer than 12; column names, cache keys and issue keys ("PROJ-1234")
// fail one of the tests.
func randomToken(v string) bool {
	if len(v) < 12 {
		return false
	}
	var digit, upper, lower bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case !tokenish[c]:
			return false
		case '0' <= c && c <= '9':
			digit = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		}
	}
	return digit && (upper || lower) || len(v) >= 20 && upper && lower
}

// placeholder reports whether v stands in for a secret: a type name, a
// boolean, an env or template reference, an angle-bracket stub, a mask such
// as "****" or "xxxx", or an earlier redaction.
func placeholder(v string) bool {
	// Trailing punctuation belongs to the sentence: "(using password: YES)".
	if len(v) <= 16 && placeholders[strings.ToLower(strings.TrimRight(v, ").,;]"))] {
		return true
	}
	for _, p := range placeholderPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	r0, _ := utf8.DecodeRuneInString(v)
	if !strings.ContainsRune("*xX.#-•…", r0) {
		return false
	}
	for _, r := range v {
		if r != r0 {
			return false
		}
	}
	return true
}

// pathLike reports a file path such as /run/secrets/db_password or
// ~/.aws/credentials: credential files are named, not leaked, by their path.
// A '+' or '=' marks base64 instead, which can also start with '/'.
func pathLike(v string) bool {
	if !(strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~/")) {
		return false
	}
	if strings.ContainsAny(v, "+= ") {
		return false
	}
	return strings.Count(v, "/") >= 2 || strings.Contains(v, ".")
}
