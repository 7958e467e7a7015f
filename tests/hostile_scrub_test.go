//go:build e2e

package tests

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"strings"
	"testing"
)

// TestHostileScrubCutKeys has a backend print a freshly generated private
// key to its stderr, line by line as a process would, so that every tail
// kiln shows of it starts mid-key; then print and return tokens hidden by
// URL encoding and zero-width characters; then crash. No 20-byte stretch of
// the key body and no token may appear in a call's error, in
// kiln://backend/NAME, in a result or in kiln's own log.
func TestHostileScrubCutKeys(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	lines := strings.Split(keyPEM, "\n")
	body := lines[1 : len(lines)-1]
	// Fabricated, of the right shapes.
	token := "ghp_" + strings.Repeat("Zq81Kd02Lm", 4)[:36]
	encoded := []string{
		strings.Replace(token, "_", "%5F", 1),
		token[:6] + "\u200b" + token[6:20] + "\u2060" + token[20:],
		strings.Replace(token, "_", `\u005f`, 1),
	}

	k := startFaultKiln(t, "  keys:\n    command: "+faultBin(t)+"\n")
	eventually(t, "the backend serves", func() bool {
		return !k.chain(t.Context(), `await keys.echo({text: "up"})`).IsError
	})

	var outputs []string
	say := func(text string) {
		t.Helper()
		code, _ := json.Marshal(map[string]any{"tool": "keys.stderr", "arguments": map[string]any{"text": text}})
		if r := k.chain(t.Context(), string(code)); r.IsError {
			t.Fatalf("keys.stderr: %s", r.Text())
		}
	}
	for _, e := range encoded {
		say("auth failed for " + e)
		code, _ := json.Marshal(map[string]any{"tool": "keys.echo", "arguments": map[string]any{"text": "token " + e + " rejected"}})
		outputs = append(outputs, "echo: "+k.chain(t.Context(), string(code)).Text())
	}
	for _, l := range lines {
		say(l) // one write per line, as a process prints a file
	}
	outputs = append(outputs, "kiln://backend/keys after the key: "+k.resource("kiln://backend/keys"))

	crash := k.chain(t.Context(), `await keys.crash({})`)
	if !crash.IsError {
		t.Fatalf("keys.crash did not fail: %s", crash.Text())
	}
	if !strings.Contains(crash.Text(), "[REDACTED:private-key]") {
		t.Errorf("the crash error shows no redacted key; was the tail rendered? %s", crash.Text())
	}
	outputs = append(outputs, "crash error: "+crash.Text())
	outputs = append(outputs, "kiln://backend/keys after the crash: "+k.resource("kiln://backend/keys"))
	k.mu.Lock()
	outputs = append(outputs, "kiln's log: "+k.stderr.String())
	k.mu.Unlock()

	leaks := 0
	for _, out := range outputs {
		plain := decodeForLeaks(out)
		for _, l := range body {
			for i := 0; i+20 <= len(l); i++ {
				if strings.Contains(plain, l[i:i+20]) {
					leaks++
					t.Errorf("key body %q leaked in %s", l[i:i+20], out)
					break
				}
			}
		}
		if strings.Contains(plain, token[4:24]) {
			leaks++
			t.Errorf("token leaked in %s", out)
		}
	}
	t.Logf("%d outputs checked for %d key body lines and %d encoded tokens: %d leaks", len(outputs), len(body), len(encoded), leaks)
}

// decodeForLeaks undoes what could hide a leak from strings.Contains:
// percent-encoding, \u escapes (JSON, log quoting) and zero-width
// characters.
func decodeForLeaks(s string) string {
	s = strings.NewReplacer(`\\u005f`, "_", `\u005f`, "_", "%5F", "_", "\u200b", "", "\u2060", "", `\n`, "\n").Replace(s)
	if d, err := url.PathUnescape(s); err == nil {
		s = d
	}
	return s
}
