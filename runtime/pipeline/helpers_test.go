package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// rng is a tiny deterministic generator so inputs (and goldens) never
// change between runs or Go versions.
type rng uint64

func (r *rng) next(n int) int {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int(uint64(*r)>>33) % n
}

var words = strings.Fields(`alpha bravo cache deploy queue worker shard index replica token
	session upload render parser socket buffer metric window cursor schema`)

// logText returns about n bytes of log lines; every 17th line is a database
// timeout error.
func logText(n int) string {
	var b strings.Builder
	r := rng(1)
	for i := 0; b.Len() < n; i++ {
		if i%17 == 16 {
			fmt.Fprintf(&b, "2025-03-01T10:%02d:%02dZ ERROR database timeout after 30s on shard %d\n", i/60%60, i%60, r.next(9))
			continue
		}
		fmt.Fprintf(&b, "2025-03-01T10:%02d:%02dZ INFO %s %s request=%d status=200 took=%dms\n",
			i/60%60, i%60, words[r.next(len(words))], words[r.next(len(words))], 1000+i, r.next(90)+1)
	}
	return b.String()
}

// prose returns about n bytes of blank-line separated paragraphs; one in
// five is about database timeouts.
func prose(n int) string {
	var b strings.Builder
	r := rng(2)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Section %d.", i+1)
		if i%5 == 3 {
			b.WriteString(" The database connection hit a timeout while the replica was catching up.")
		}
		for range 6 + r.next(6) {
			fmt.Fprintf(&b, " The %s %s handles %s.", words[r.next(len(words))], words[r.next(len(words))], words[r.next(len(words))])
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

type item struct {
	ID    int      `json:"id"`
	Name  string   `json:"name"`
	Price float64  `json:"price"`
	Tags  []string `json:"tags"`
	Notes string   `json:"notes"`
}

func items(n int) []item {
	r := rng(3)
	out := make([]item, n)
	for i := range out {
		out[i] = item{
			ID:    100 + i,
			Name:  fmt.Sprintf("%s-%s-%d", words[r.next(len(words))], words[r.next(len(words))], i),
			Price: float64(r.next(10000)) / 100,
			Tags:  []string{words[r.next(len(words))], words[r.next(len(words))]},
			Notes: strings.Repeat(words[r.next(len(words))]+" ", 20),
		}
	}
	return out
}

// itemsJSON returns a uniform array of n objects, about 230 bytes each.
func itemsJSON(n int) string { return mustJSON(items(n)) }

// nestedJSON returns a document that is not a uniform array: a wrapper
// object with scalars, a long string, a nested array and an object.
func nestedJSON(n int) string {
	return mustJSON(map[string]any{
		"total":  n,
		"readme": strings.Repeat("This repository holds the worker fleet. ", 30),
		"results": map[string]any{
			"items":  items(n),
			"cursor": "c-42",
		},
		"facets": map[string]any{"tags": words, "owner": map[string]string{"login": "kiln"}},
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func diff[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// splitTrailer splits Text output into body and trailer lines.
func splitTrailer(out string) (string, []string) {
	i := strings.LastIndex(out, "\n\n[")
	if i < 0 {
		return out, nil
	}
	tail := out[i+2:]
	for _, l := range strings.Split(tail, "\n") {
		if !strings.HasPrefix(l, "[Intent filter:") && !strings.HasPrefix(l, "[Output:") {
			return out, nil
		}
	}
	return out[:i], strings.Split(tail, "\n")
}

func toolcallText(s string) *toolcall.Result { return toolcall.Text(s) }
