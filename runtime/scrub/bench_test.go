package scrub

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// cleanJSON builds about size bytes of a realistic API response with no
// secrets: a GitHub-style issue list with URLs, timestamps, SHAs, UUIDs,
// prose bodies, labels and counters, so every trigger byte of the scan
// (':', '=', '-', word starts) occurs at its natural rate.
func cleanJSON(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the scrubber gateway backend request response token count session error " +
		"retry timeout config server client search result page cursor cache index value stream " +
		"a an of to in is for with on at by from and or not be this that it as was are")
	hex := func(n int) string {
		const d = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = d[rng.IntN(16)]
		}
		return string(b)
	}
	prose := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				b.WriteString(".\n\n")
			}
		}
		return b.String()
	}
	type user struct {
		Login   string `json:"login"`
		ID      int    `json:"id"`
		URL     string `json:"url"`
		HTMLURL string `json:"html_url"`
		Type    string `json:"type"`
	}
	type issue struct {
		URL       string            `json:"url"`
		ID        int               `json:"id"`
		NodeID    string            `json:"node_id"`
		Number    int               `json:"number"`
		Title     string            `json:"title"`
		User      user              `json:"user"`
		Labels    []string          `json:"labels"`
		State     string            `json:"state"`
		Comments  int               `json:"comments"`
		CreatedAt string            `json:"created_at"`
		UpdatedAt string            `json:"updated_at"`
		Body      string            `json:"body"`
		Commit    string            `json:"merge_commit_sha"`
		RequestID string            `json:"request_id"`
		Reactions map[string]int    `json:"reactions"`
		Extra     map[string]string `json:"extra"`
	}
	var issues []issue
	for n := 0; ; n++ {
		login := words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(1000))
		issues = append(issues, issue{
			URL:       fmt.Sprintf("https://api.github.com/repos/kilnmcp/kiln/issues/%d", n),
			ID:        rng.IntN(1 << 30),
			NodeID:    "I_kwDO" + hex(16),
			Number:    n,
			Title:     prose(8),
			User:      user{login, rng.IntN(1 << 24), "https://api.github.com/users/" + login, "https://github.com/" + login, "User"},
			Labels:    []string{"bug", "area/runtime", "priority: p2"},
			State:     "open",
			Comments:  rng.IntN(40),
			CreatedAt: fmt.Sprintf("2026-0%d-1%dT0%d:1%d:4%dZ", 1+rng.IntN(9), rng.IntN(10), rng.IntN(10), rng.IntN(10), rng.IntN(10)),
			UpdatedAt: "2026-03-14T09:12:44Z",
			Body:      prose(60) + "\n\n```\nlevel=info msg=\"retry\" attempt=3 took=12ms\n```",
			Commit:    hex(40),
			RequestID: hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12),
			Reactions: map[string]int{"+1": rng.IntN(9), "heart": rng.IntN(3), "total_count": rng.IntN(12)},
			Extra:     map[string]string{"token_count": fmt.Sprint(rng.IntN(5000)), "sort_key": "created_at"},
		})
		if n%20 == 19 {
			if b, _ := json.Marshal(issues); len(b) >= size {
				return b
			}
		}
	}
}

// withSecrets plants a handful of secrets into doc's text.
func withSecrets(doc string) string {
	plants := []string{fakeGH, "AKIAQ3EGRIUHD7A6WQ2M", fakeJWT, "password=hunter22", "https://u:pw123456@db/x"}
	step := len(doc) / (len(plants) + 1)
	var b strings.Builder
	prev := 0
	for i, p := range plants {
		at := (i + 1) * step
		at += strings.IndexByte(doc[at:], ' ') + 1
		b.WriteString(doc[prev:at])
		b.WriteString(p + " ")
		prev = at
	}
	b.WriteString(doc[prev:])
	return b.String()
}

func BenchmarkScrub(b *testing.B) {
	doc := cleanJSON(200 << 10)
	text := string(doc)
	secret := withSecrets(text)
	block, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	result := &toolcall.Result{Content: []json.RawMessage{block}}
	var values []Value
	for i := range 10 {
		values = append(values, Value{Name: fmt.Sprint("V", i), Value: fmt.Sprintf("secret-value-%02d-x7Kq", i)})
	}
	sc := New(Options{})
	scValues := New(Options{Values: values})
	if sc.String(text) != text || string(sc.JSON(doc)) != text || sc.Result(result) != result {
		b.Fatal("clean input was redacted")
	}
	if n := strings.Count(sc.String(secret), "[REDACTED:"); n != 5 {
		b.Fatalf("secret input: %d redactions, want 5", n)
	}
	run := func(name string, n int, fn func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				fn()
			}
		})
	}
	run("clean-json-200KB", len(doc), func() { sc.JSON(doc) })
	run("clean-text-200KB", len(text), func() { sc.String(text) })
	run("clean-result-200KB", len(block), func() { sc.Result(result) })
	run("clean-text-200KB-10values", len(text), func() { scValues.String(text) })
	run("secrets-text-200KB", len(secret), func() { sc.String(secret) })
	// Crafted to make every anchor rescan the rest of the text; maxRun
	// keeps each rescan short.
	for _, unit := range []string{"sk-", "eyJ-", "xoxb-", "password=", "api_key=", "key: '", "AKIA", "%41", "g\u200b", "\\u0041", "-----END PRIVATE KEY-----\nMIIE\n"} {
		adv := strings.Repeat(unit, (200<<10)/len(unit))
		run("adversarial-"+strings.Trim(unit[:min(len(unit), 8)], ":=' -\n"), len(adv), func() { sc.String(adv) })
	}
}
