package scrub

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Fabricated values, built by repetition so no real key is ever written
// down and each has the exact length its format needs.
var (
	fakeGH     = "ghp_" + strings.Repeat("aB3d", 9)                                     // 36 body chars
	fakeOpenAI = "sk-proj-" + strings.Repeat("Xy7_Qw2-", 6)                             // mixed case + digits
	fakeAnt    = "sk-ant-api03-" + strings.Repeat("Zk9Lm2Pq", 10) + "AA"                // Anthropic layout
	fakeJWT    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX2Zha2U" // header.payload.sig
)

// expectScrub checks that sc turns in into want.
func expectScrub(t *testing.T, sc *Scrubber, in, want string) {
	t.Helper()
	if diff := cmp.Diff(want, sc.String(in)); diff != "" {
		t.Errorf("String(%q) (-want +got):\n%s", in, diff)
	}
}

func TestShapes(t *testing.T) {
	sc := New(Options{})
	tests := []struct{ name, in, want string }{
		{"aws key id", "key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED:aws-access-key] here"},
		{"aws sts key id", "ASIAY34FZKBOKMUTVV7A,", "[REDACTED:aws-access-key],"},
		{"aws key id too long", "AKIAIOSFODNN7EXAMPLEX", "AKIAIOSFODNN7EXAMPLEX"},
		{"aws key id inside word", "xAKIAIOSFODNN7EXAMPLE", "xAKIAIOSFODNN7EXAMPLE"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]"},
		{"aws secret ini", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "aws_secret_access_key = [REDACTED:aws-secret-key]\n"},
		{"github classic", "token " + fakeGH + ".", "token [REDACTED:github-token]."},
		{"github server", "ghs_" + strings.Repeat("Q1w2", 9), "[REDACTED:github-token]"},
		{"github short", "ghp_abc", "ghp_abc"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github-token]"},
		{"openai", "key=" + fakeOpenAI, "key=[REDACTED:openai-key]"},
		{"openai legacy", "sk-" + strings.Repeat("a1B2c3D4", 6), "[REDACTED:openai-key]"},
		{"anthropic not openai", "x " + fakeAnt, "x [REDACTED:anthropic-key]"},
		{"sk-learn prose", "we use sk-learn-compatible-estimators here", "we use sk-learn-compatible-estimators here"},
		{"stripe live", "sk_live_" + strings.Repeat("4eC3", 6), "[REDACTED:stripe-key]"},
		{"stripe restricted", "rk_test_" + strings.Repeat("51Hx", 6), "[REDACTED:stripe-key]"},
		{"jwt", "token " + fakeJWT + " end", "token [REDACTED:jwt] end"},
		{"jwt unsigned", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "[REDACTED:jwt]"},
		{"slack bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "[REDACTED:slack-token]"},
		{"slack app", "xapp-1-A0123456789-1234567890-abcdef", "[REDACTED:slack-token]"},
		{"slack webhook", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://hooks.slack.com/services/[REDACTED:slack-webhook]"},
		{"google", "AIzaSyA-1234567890abcdefghijklmnopqrstu!", "[REDACTED:google-api-key]!"},
		{"google wrong length", "AIzaSyA-1234567890abcdef", "AIzaSyA-1234567890abcdef"},
		{"bearer", "curl -H 'X: Bearer abc123def456ghi' x", "curl -H 'X: Bearer [REDACTED:bearer-token]' x"},
		{"bearer word", "Bearer authentication is supported", "Bearer authentication is supported"},
		{"basic auth url", "clone https://alice:s3cr3t-pw@git.example.com/repo.git now", "clone https://alice:[REDACTED:basic-auth]@git.example.com/repo.git now"},
		{"basic auth no user", "redis://:hunter22@cache:6379/0", "redis://:[REDACTED:basic-auth]@cache:6379/0"},
		{"url user only", "ssh://git@github.com/org/repo", "ssh://git@github.com/org/repo"},
		{"url port", "http://localhost:8080/health", "http://localhost:8080/health"},
		{"pem rsa", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED:private-key]\nb"},
		{"pem plain", "-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----", "[REDACTED:private-key]"},
		{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED:private-key]"},
		{"pem encrypted", "x -----BEGIN ENCRYPTED PRIVATE KEY-----\nMII\n-----END ENCRYPTED PRIVATE KEY----- y", "x [REDACTED:private-key] y"},
		{"pem truncated", "key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE", "key: [REDACTED:private-key]"},
		{"after json escape", `"out:\n` + fakeGH + `\tAKIAIOSFODNN7EXAMPLE\r` + fakeJWT + `"`, `"out:\n[REDACTED:github-token]\t[REDACTED:aws-access-key]\r[REDACTED:jwt]"`},
		{"after plain n", "n" + fakeGH, "n" + fakeGH},
		{"pem certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestAssignments(t *testing.T) {
	sc := New(Options{})
	tests := []struct{ name, in, want string }{
		{"env", "API_KEY=abcd1234efgh5678", "API_KEY=[REDACTED:assignment]"},
		{"shell export", "export DB_PASSWORD='hunter2 horse'", "export DB_PASSWORD='[REDACTED:assignment]'"},
		{"yaml", "  client_secret: Zx9-QQ-Kp\n  user: bob", "  client_secret: [REDACTED:assignment]\n  user: bob"},
		{"yaml comment", "password: pa55word # prod", "password: [REDACTED:assignment] # prod"},
		{"header", "X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED:assignment]"},
		{"authorization bearer", "Authorization: Bearer abcdefgh", "Authorization: Bearer [REDACTED:bearer-token]"},
		{"auth prose after scheme", `msg=listening auth="bearer token required"`, `msg=listening auth="bearer token required"`},
		{"auth token after scheme", `auth="Bearer Zq81Kd02Lm93Xn84"`, `auth="Bearer [REDACTED:bearer-token]"`},
		{"authorization basic", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Authorization: Basic [REDACTED:basic-auth]"},
		{"json", `{"password": "hunter22", "user": "bob"}`, `{"password": "[REDACTED:assignment]", "user": "bob"}`},
		{"json compact", `{"apiKey":"Zq81Kd02Lm93Xn84"}`, `{"apiKey":"[REDACTED:assignment]"}`},
		{"json in json", `"{\"api_key\": \"Zq81Kd02Lm93Xn84\"}"`, `"{\"api_key\": \"[REDACTED:assignment]\"}"`},
		{"escaped newline", `"line\nSECRET=abc123"`, `"line\nSECRET=[REDACTED:assignment]"`},
		{"query", "GET /v1?api_key=Zq81Kd02Lm93Xn84&page=2", "GET /v1?api_key=[REDACTED:assignment]&page=2"},
		{"go", `password := "s3cret!"`, `password := "[REDACTED:assignment]"`},
		{"ruby", `:auth_token => "Zq81Kd02Lm93Xn84"`, `:auth_token => "[REDACTED:assignment]"`},
		{"short strong", "password=pw", "password=pw"},
		{"token count", "token_count=12", "token_count=12"},
		{"max tokens", `"max_tokens": 4096`, `"max_tokens": 4096`},
		{"page token", `"nextPageToken": "CAoQAAAAAAAAAAA123"`, `"nextPageToken": "CAoQAAAAAAAAAAA123"`},
		{"sort key", "sort_key=created_at", "sort_key=created_at"},
		{"bare key", `"key": "PROJ-1234"`, `"key": "PROJ-1234"`},
		{"placeholder env", "password=${DB_PASSWORD}", "password=${DB_PASSWORD}"},
		{"placeholder mask", "password: ********", "password: ********"},
		{"placeholder angle", "API_KEY=<your-key-here>", "API_KEY=<your-key-here>"},
		{"type annotation", "password: string;", "password: string;"},
		{"code call", "password = getpass()", "password = getpass()"},
		{"path", "credentials: /etc/app/credentials.json", "credentials: /etc/app/credentials.json"},
		{"shell pwd", "PWD=/home/user/src", "PWD=/home/user/src"},
		{"comparison", "if password == other {", "if password == other {"},
		{"secret name", "secret_name: prod-db", "secret_name: prod-db"},
		{"weak word value", "auth: oauth2", "auth: oauth2"},
		{"vendor type wins", "GITHUB_TOKEN=" + fakeGH, "GITHUB_TOKEN=[REDACTED:github-token]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestKnownValues(t *testing.T) {
	sc := New(Options{Values: []Value{
		{Name: "GITHUB_TOKEN", Value: fakeGH},
		{Name: "DB_PASSWORD", Value: "plainword"},
		{Name: "DB_PASSWORD_LONG", Value: "plainword-with-suffix"},
		{Name: "PORT", Value: "8080"},
		{Name: "DUP", Value: "plainword"},
	}})
	tests := []struct{ name, in, want string }{
		{"env beats shape", "t=" + fakeGH, "t=[REDACTED:env:GITHUB_TOKEN]"},
		{"any shape", "the plainword is plain", "the [REDACTED:env:DB_PASSWORD] is plain"},
		{"longest first", "plainword-with-suffix!", "[REDACTED:env:DB_PASSWORD_LONG]!"},
		{"inside word", "xplainwordx", "x[REDACTED:env:DB_PASSWORD]x"},
		{"too short ignored", "listening on 8080", "listening on 8080"},
		{"repeated", "plainword plainword", "[REDACTED:env:DB_PASSWORD] [REDACTED:env:DB_PASSWORD]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectScrub(t, sc, tt.in, tt.want) })
	}
}

func TestStats(t *testing.T) {
	sc := New(Options{Values: []Value{{Name: "TOK", Value: "knownvalue1"}}})
	out, st := sc.Scrub("a " + fakeGH + " b " + fakeGH + " knownvalue1 " + fakeJWT)
	want := Stats{"github-token": 2, "env:TOK": 1, "jwt": 1}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Scrub stats (-want +got):\n%s\nout: %s", diff, out)
	}
	if _, st := sc.Scrub("nothing here"); st != nil {
		t.Errorf("Scrub(clean) stats = %v, want nil", st)
	}
	sc.JSON([]byte(`{"a":"` + fakeJWT + `"}`))
	want["jwt"]++
	if diff := cmp.Diff(want, sc.Totals()); diff != "" {
		t.Errorf("Totals (-want +got):\n%s", diff)
	}
}

func TestNilScrubber(t *testing.T) {
	var sc *Scrubber
	in := "GITHUB_TOKEN=" + fakeGH
	if got := sc.String(in); got != in {
		t.Errorf("nil String = %q, want input", got)
	}
	if got, st := sc.Scrub(in); got != in || st != nil {
		t.Errorf("nil Scrub = %q, %v", got, st)
	}
	if got := string(sc.JSON([]byte(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("nil JSON = %s", got)
	}
	if sc.Result(nil) != nil || sc.Totals() != nil {
		t.Error("nil Result/Totals not nil")
	}
}

func TestZeroScrubber(t *testing.T) {
	var sc Scrubber
	expectScrub(t, &sc, "a "+fakeGH, "a [REDACTED:github-token]")
	if diff := cmp.Diff(Stats{"github-token": 1}, sc.Totals()); diff != "" {
		t.Errorf("Totals (-want +got):\n%s", diff)
	}
}

func TestConcurrent(t *testing.T) {
	sc := New(Options{Values: []Value{{Name: "V", Value: "concurrent-value"}}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := sc.String("x concurrent-value " + fakeGH); got != "x [REDACTED:env:V] [REDACTED:github-token]" {
					t.Errorf("got %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(Stats{"env:V": 400, "github-token": 400}, sc.Totals()); diff != "" {
		t.Errorf("Totals (-want +got):\n%s", diff)
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "API_KEY": true, "x-api-key": true, "apiKey": true, "APIKey": true,
		"client_secret": true, "DB_PASSWORD": true, "Authorization": true, "AWS_SECRET_ACCESS_KEY": true,
		"OPENAI_API_KEY": true, "SECRET_KEY_BASE": true, "db_pwd": true, "credentials": true,
		"PWD": false, "HOME": false, "AWS_REGION": false, "token_count": false, "max_tokens": false,
		"nextPageToken": false, "public_key": false, "key": false, "author": false, "PASSWORD_LENGTH": false,
		"KEY_ID": false, "monkey": false, "secret_name": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLearn(t *testing.T) {
	sc := New(Options{Values: []Value{{Name: "OLD_TOKEN", Value: "old-secret-value-1"}}})
	const fresh = "zq9-fresh-secret-42"
	in := "a=old-secret-value-1 b=" + fresh + " c=" + fresh
	if got := sc.String(in); strings.Contains(got, "old-secret-value-1") || !strings.Contains(got, fresh) {
		t.Fatalf("before Learn: %q", got)
	}
	sc.Learn(Value{Name: "NEW_TOKEN", Value: fresh}, Value{Name: "SHORT", Value: "tiny"})
	got := sc.String(in)
	if want := "a=[REDACTED:env:OLD_TOKEN] b=[REDACTED:env:NEW_TOKEN] c=[REDACTED:env:NEW_TOKEN]"; got != want {
		t.Errorf("after Learn:\n got %q\nwant %q", got, want)
	}
	if n := sc.Totals()["env:NEW_TOKEN"]; n != 2 {
		t.Errorf("learned value counted %d times, want 2", n)
	}
	raw := sc.JSON([]byte(`{"k":"` + fresh + `"}`))
	if strings.Contains(string(raw), fresh) {
		t.Errorf("JSON after Learn: %s", raw)
	}
	var nilSC *Scrubber
	nilSC.Learn(Value{Name: "X", Value: fresh}) // no panic
}

func TestKnownValueInsideJSON(t *testing.T) {
	const v = `p@ss"w<rd>&\x1`
	sc := New(Options{Values: []Value{{Name: "DB_PASSWORD", Value: v}}})
	raw, _ := json.Marshal(map[string]string{"dsn": "user:" + v + "@db"})
	if got := sc.String(string(raw)); strings.Contains(got, `w\u003crd`) || strings.Contains(got, `ss\"w`) || !strings.Contains(got, "[REDACTED:env:DB_PASSWORD]") {
		t.Errorf("escaped value survived: %s", got)
	}
}
