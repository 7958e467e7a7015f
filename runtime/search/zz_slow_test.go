package search

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSlowCorpus(t *testing.T) {
	dir := os.Getenv("FUZZDIR")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		raw, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		lines := strings.Split(string(raw), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Log(e.Name(), err)
			continue
		}
		data := []byte(s)
		start := time.Now()
		done := make(chan bool)
		go func() {
			for _, decode := range []func([]byte) (*Index, error){Load, decodePayload} {
				ix, err := decode(data)
				if err != nil {
					continue
				}
				t.Logf("%s decoded: %d docs cfg %+v", e.Name(), ix.Len(), ix.cfg)
				for _, q := range roundTripQueries {
					t0 := time.Now()
					ix.Search(q, Options{Limit: 3})
					if time.Since(t0) > time.Second {
						t.Logf("slow query %q", q)
					}
				}
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s hangs", e.Name())
		}
		_ = start
	}
}
