package scrub

import (
	"slices"
	"strings"
)

// wordSecret matches the vendor token shapes that start at s[i], a word
// start. Each shape has a literal prefix, so most calls return after one or
// two byte comparisons.
//
// The OpenAI/Anthropic, JWT and Slack shapes can fail after scanning a long
// run; a start inside that run would fail the same way (its run is a
// suffix of the one that failed), so m records where the run ended and
// later starts before it are skipped. Without this "sk-sk-sk-…" rescans
// the rest of the text at every "sk-".
func wordSecret(s string, i int, m *memo) (span, bool) {
	r := s[i:]
	if len(r) < 8 {
		return span{}, false
	}
	end, k, dead := -1, kind(0), 0
	switch r[0] {
	case 'A':
		end, k = awsOrGoogle(r)
	case 'g':
		end, k = githubToken(r), kindGitHub
	case 's', 'r':
		if r[2] == '-' && i < m.deadSK {
			return span{}, false
		}
		end, k, dead = skKey(r)
		m.deadSK = max(m.deadSK, i+dead)
	case 'e':
		if i < m.deadJWT {
			return span{}, false
		}
		end, dead = jwt(r)
		k, m.deadJWT = kindJWT, max(m.deadJWT, i+dead)
	case 'x':
		if i < m.deadSlack {
			return span{}, false
		}
		end, dead = slackToken(r)
		k, m.deadSlack = kindSlack, max(m.deadSlack, i+dead)
	case 'B', 'b':
		return bearer(s, i)
	}
	if end < 0 {
		return span{}, false
	}
	return span{i, i + end, k}, true
}

var awsPrefixes = []string{"AKIA", "ASIA", "AROA", "AIDA", "AGPA", "ANPA", "ANVA", "AIPA", "ABIA", "ACCA"}

// awsOrGoogle matches an AWS access key ID (four-letter type prefix and 16
// upper-case alphanumerics) or a Google API key ("AIza" and 35 base64url).
func awsOrGoogle(r string) (int, kind) {
	if strings.HasPrefix(r, "AIza") {
		if e := runEnd(r, 4, b64url); e == 39 {
			return e, kindGoogle
		}
		return -1, 0
	}
	if len(r) < 20 || !(slices.Contains(awsPrefixes, r[:4]) || r[1] == '3' && r[2] == 'T' && upperAlnum[r[3]]) {
		return -1, 0
	}
	if e := runEnd(r, 4, upperAlnum); e == 20 && (len(r) == 20 || !alnum[r[20]]) {
		return 20, kindAWSKey
	}
	return -1, 0
}

// githubToken matches classic tokens (ghp_, gho_, ghu_, ghs_, ghr_ and at
// least 36 alphanumerics) and fine-grained ones (github_pat_…).
func githubToken(r string) int {
	if strings.HasPrefix(r, "github_pat_") {
		if e := runEnd(r, 11, alnumU); e-11 >= 22 {
			return e
		}
		return -1
	}
	if r[1] != 'h' || strings.IndexByte("pousr", r[2]) < 0 || r[3] != '_' {
		return -1
	}
	if e := runEnd(r, 4, alnum); e-4 >= 36 {
		return e
	}
	return -1
}

// skKey matches Anthropic (sk-ant-…), OpenAI (sk-…, sk-proj-…) and Stripe
// secret or restricted keys (sk_live_, rk_live_ and their _test_ twins).
// OpenAI and Anthropic bodies must mix digits and both cases, which random
// keys always do and hyphenated words such as "sk-learn-compatible" never
// do.
// dead is where a failed OpenAI/Anthropic body run ended (see wordSecret).
func skKey(r string) (end int, k kind, dead int) {
	if r[1] != 'k' {
		return -1, 0, 0
	}
	if r[2] == '_' {
		if strings.HasPrefix(r[3:], "live_") || strings.HasPrefix(r[3:], "test_") {
			if e := runEnd(r, 8, alnum); e-8 >= 16 {
				return e, kindStripe, 0
			}
		}
		return -1, 0, 0
	}
	if r[0] != 's' || r[2] != '-' {
		return -1, 0, 0
	}
	body, k := 3, kindOpenAI
	if strings.HasPrefix(r, "sk-ant-") {
		body, k = 7, kindAnthropic
	}
	e := runEnd(r, body, b64url)
	if e-body >= 20 && mixed(r[body:e]) {
		return e, k, 0
	}
	return -1, 0, e
}

// jwt matches a JWT (or JWE): a base64url JSON header, so "eyJ", then two
// to four more dot-separated base64url segments. An unsigned token's empty
// signature still counts. dead is where a failed header run ended (see
// wordSecret).
func jwt(r string) (end, dead int) {
	if r[1] != 'y' || r[2] != 'J' {
		return -1, 0
	}
	e := runEnd(r, 3, b64url)
	if e < 10 || e >= len(r) || r[e] != '.' {
		return -1, e
	}
	p := runEnd(r, e+1, b64url)
	if p-(e+1) < 2 || p >= len(r) || r[p] != '.' {
		return -1, e
	}
	end = runEnd(r, p+1, b64url)
	for seg := 3; seg < 5 && end < len(r) && r[end] == '.' && end+1 < len(r) && b64url[r[end+1]]; seg++ {
		end = runEnd(r, end+1, b64url)
	}
	return end, 0
}

// slackToken matches Slack bot, user and app tokens (xoxb-, xoxp-, xoxa-,
// xoxr-, xoxs-, xapp-) whose body holds digits, as real ones always do.
// dead is where a failed body run ended (see wordSecret).
func slackToken(r string) (end, dead int) {
	var body int
	switch {
	case strings.HasPrefix(r, "xox") && strings.IndexByte("abprs", r[3]) >= 0 && r[4] == '-':
		body = 5
	case strings.HasPrefix(r, "xapp-"):
		body = 5
	default:
		return -1, 0
	}
	e := runEnd(r, body, slackBody)
	if e-body >= 10 && hasDigit(r[body:e]) {
		return e, 0
	}
	return -1, e
}

// bearer matches the credential after "Bearer ", keeping the scheme word
// so the reader still sees what kind of header it was.
func bearer(s string, i int) (span, bool) {
	if len(s)-i < 8 || !strings.EqualFold(s[i:i+6], "bearer") || (s[i+6] != ' ' && s[i+6] != '\t') {
		return span{}, false
	}
	j := i + 7
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	e := runEnd(s, j, bearerBody)
	for e < len(s) && s[e] == '=' {
		e++
	}
	if tok := s[j:e]; len(tok) >= 8 && hasDigit(tok) && hasLetter(tok) {
		return span{j, e, kindBearer}, true
	}
	return span{}, false
}

// pemBlock matches a PEM private key block from "-----BEGIN … PRIVATE
// KEY-----" through its END line. With no END line (a truncated result, or
// one line of a log) the block runs to the end of s and open is true:
// losing the tail of a text beats leaking key material.
func pemBlock(s string, i int) (end int, ok, open bool) {
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[i:], begin) {
		return 0, false, false
	}
	labelStart := i + len(begin)
	l := strings.Index(s[labelStart:min(len(s), labelStart+64)], "-----")
	if l < 0 {
		return 0, false, false
	}
	label := s[labelStart : labelStart+l]
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return 0, false, false
	}
	body := labelStart + l + 5
	if !keyFollows(s, body) {
		return 0, false, false
	}
	e := strings.Index(s[body:], "-----END ")
	if e < 0 {
		return len(s), true, true
	}
	e += body + len("-----END ")
	c := strings.Index(s[e:min(len(s), e+64)], "-----")
	if c < 0 {
		return len(s), true, true
	}
	return e + c + 5, true, false
}

// urlDelim ends the authority part of a URL.
var urlDelim = class("/?#\x00-\x20\"'<>`\\")

// urlSecret redacts the password of scheme://user:password@host, keeping
// scheme, user and host so the reader can still tell which service it was,
// and the secret path of Slack incoming webhooks. colon is the index of
// "://".
func urlSecret(s string, colon int) (span, bool) {
	k := colon
	for k > 0 && schemeChar[s[k-1]] {
		k--
	}
	for k < colon && !isLetter(s[k]) {
		k++
	}
	if k == colon {
		return span{}, false
	}
	a := colon + 3
	e := a
	for lim := min(len(s), a+maxRun); e < lim && !urlDelim[s[e]]; {
		e++
	}
	auth := s[a:e]
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		if auth == "hooks.slack.com" && strings.HasPrefix(s[e:], "/services/") {
			p := e + len("/services/")
			if end := runEnd(s, p, webhookPath); end-p >= 20 {
				return span{p, end, kindSlackWebhook}, true
			}
		}
		return span{}, false
	}
	c := strings.IndexByte(auth[:at], ':')
	if c < 0 {
		return span{}, false
	}
	if pw := auth[c+1 : at]; pw == "" || placeholder(pw) {
		return span{}, false
	}
	return span{a + c + 1, a + at, kindBasicAuth}, true
}
