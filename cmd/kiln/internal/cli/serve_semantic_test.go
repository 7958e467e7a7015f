//go:build semantic

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kilnmcp/kiln/generated"
	"github.com/kilnmcp/kiln/generated/searchindex"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/semantic/semantictest"
)

// TestServeSemantic runs kiln serve over stdio with vectors of the compiled
// tools frozen by a test model, as kiln-gen emit would compile them in, and
// checks that search_tools fuses the two rankings end to end.
func TestServeSemantic(t *testing.T) {
	lex, err := search.LoadString(searchindex.Data)
	if err != nil {
		t.Fatal(err)
	}
	// unmatched shares no word, prefix or near spelling with any compiled
	// tool; strong is memory.create_entities's description.
	const (
		unmatched = "zeppelin quokka bagpipes"
		strong    = "Create multiple new entities in the knowledge graph"
		strongID  = "memory.create_entities"
		limit     = 5
	)
	if hits := lex.Search(unmatched, search.Options{}); len(hits) != 0 {
		t.Fatalf("precondition: the lexical tiers find %v for %q", hits, unmatched)
	}
	if hits := lex.Search(strong, search.Options{}); len(hits) == 0 || hits[0].ID != strongID {
		t.Fatalf("precondition: the lexical tiers rank %v for %q, want %s first", hits, strong, strongID)
	}

	var docs []search.Doc
	texts := []string{unmatched}
	for i := range lex.Len() {
		d := lex.Doc(i)
		docs = append(docs, d)
		texts = append(texts, semantic.ToolText(d.Name, d.Description))
	}
	path, sum := modelFor(t, 1, texts)
	other, otherSum := modelFor(t, 2, texts)
	frozen := frozenVectors(t, path, sum, docs)
	prev := compiledVectors
	compiledVectors = func() ([]byte, bool) { return frozen, true }
	t.Cleanup(func() { compiledVectors = prev })

	t.Run("fused", func(t *testing.T) {
		s := startServe(t, serveConfig(t, path, sum))
		s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}`)
		s.notify("notifications/initialized")

		// With no lexical hit the fused ranking is the embedding's alone.
		want := nearest(t, path, sum, frozen, unmatched, limit)
		if len(want) == 0 {
			t.Fatalf("precondition: no compiled tool is near %q", unmatched)
		}
		got := s.search(unmatched, limit)
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Tool)
			if r.MatchedBy != "semantic" {
				t.Errorf("%q: %s matched_by %q, want semantic", unmatched, r.Tool, r.MatchedBy)
			}
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("search_tools(%q) (-want +got):\n%s", unmatched, diff)
		}

		// A random embedding may rank the lexical winner anywhere, but
		// RRF keeps a first lexical rank near the top.
		got = s.search(strong, limit)
		rank := -1
		for i, r := range got {
			if r.Tool == strongID {
				rank = i
				if r.MatchedBy != "bm25" {
					t.Errorf("%q: %s matched_by %q, want bm25", strong, r.Tool, r.MatchedBy)
				}
			}
		}
		if rank < 0 || rank > 2 {
			t.Errorf("search_tools(%q) = %v, want %s in the first three", strong, got, strongID)
		}
		if code := s.stop(); code != exitOK {
			t.Errorf("serve exit %d, want %d; stderr:\n%s", code, exitOK, s.stderr.String())
		}
	})

	t.Run("model of other vectors", func(t *testing.T) {
		s := startServe(t, serveConfig(t, other, otherSum))
		if code := s.stop(); code != exitFail {
			t.Errorf("serve exit %d, want %d", code, exitFail)
		}
		for _, m := range []string{"gateway.semantic.sha256", otherSum, sum} {
			if !strings.Contains(s.stderr.String(), m) {
				t.Errorf("stderr does not mention %q:\n%s", m, s.stderr.String())
			}
		}
	})
}

// modelFor writes a test model whose vocabulary holds every word of corpus.
func modelFor(t *testing.T, seed uint64, corpus []string) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	b := semantictest.Tiny
	b.Seed = seed
	sum, err := b.WriteModel(path, corpus)
	if err != nil {
		t.Fatal(err)
	}
	return path, sum
}

// nearest returns the IDs of at most k tools of frozen with a positive
// cosine to q, best first: what the semantic side ranks.
func nearest(t *testing.T, path, sum string, frozen []byte, q string, k int) []string {
	t.Helper()
	v, err := semantic.Load(frozen)
	if err != nil {
		t.Fatal(err)
	}
	e, err := semantic.Open(path, sum, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	hits, err := v.Query(e, q, k)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		if h.Score > 0 {
			ids = append(ids, h.ID)
		}
	}
	return ids
}

func serveConfig(t *testing.T, model, sum string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "kiln.yaml")
	yaml := fmt.Sprintf("version: 1\ngateway:\n  state_dir: %s\n  semantic:\n    model: %s\n    sha256: %s\n    threads: 1\n",
		filepath.Join(dir, "state"), model, sum)
	// Compiled backends the config does not name are not served; declared
	// but disabled, they are searchable and never start.
	reg := registry.New()
	if err := generated.RegisterAll(reg); err != nil {
		t.Fatal(err)
	}
	yaml += "backends:\n"
	for _, name := range reg.BackendNames() {
		yaml += fmt.Sprintf("  %s:\n    command: \"true\"\n    enabled: false\n", name)
	}
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// served is a kiln serve running in-process, spoken to in raw JSON-RPC
// lines: the cli package may not import an MCP client.
type served struct {
	t      *testing.T
	ctx    context.Context
	in     *io.PipeWriter
	lines  chan []byte
	code   chan int
	stderr *syncBuffer
	nextID int
}

func startServe(t *testing.T, cfg string) *served {
	t.Helper()
	// A hang fails the test with a message instead of at the package timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &served{t: t, ctx: ctx, in: inW, lines: make(chan []byte), code: make(chan int, 1), stderr: &syncBuffer{}}
	go func() {
		code := runServe(ctx, []string{"--config", cfg}, inR, outW, s.stderr)
		// Unblock the test's writes and reads once serve is gone.
		inR.CloseWithError(io.ErrClosedPipe)
		outW.Close()
		s.code <- code
	}()
	go func() {
		defer close(s.lines)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case s.lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *served) send(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		s.t.Fatalf("write to serve: %v; stderr:\n%s", err, s.stderr.String())
	}
}

func (s *served) notify(method string) {
	s.t.Helper()
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method))
}

// call sends a request and returns its result, skipping notifications.
func (s *served) call(method, params string) json.RawMessage {
	s.t.Helper()
	s.nextID++
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.nextID, method, params))
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("%s: serve closed stdout; stderr:\n%s", method, s.stderr.String())
			}
			var resp struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &resp); err != nil {
				s.t.Fatalf("%s: bad line %q: %v", method, line, err)
			}
			if resp.ID == nil || *resp.ID != s.nextID {
				continue
			}
			if resp.Error != nil {
				s.t.Fatalf("%s: error %s", method, resp.Error)
			}
			return resp.Result
		case <-s.ctx.Done():
			s.t.Fatalf("%s: no answer: %v; stderr:\n%s", method, s.ctx.Err(), s.stderr.String())
		}
	}
}

type servedHit struct {
	Tool      string `json:"tool"`
	MatchedBy string `json:"matched_by"`
}

// search calls search_tools and returns its results, best first.
func (s *served) search(q string, limit int) []servedHit {
	s.t.Helper()
	args, _ := json.Marshal(map[string]any{"task_description": q, "limit": limit})
	raw := s.call("tools/call", fmt.Sprintf(`{"name":"search_tools","arguments":%s}`, args))
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError || len(res.Content) != 1 {
		s.t.Fatalf("search_tools(%q) = %s (%v)", q, raw, err)
	}
	var out struct {
		Results   []servedHit
		MatchedBy string `json:"matched_by"` // brief answers say it once when every hit shares it
	}
	if err := json.Unmarshal([]byte(res.Content[0].Text), &out); err != nil {
		s.t.Fatalf("search_tools(%q) text %q: %v", q, res.Content[0].Text, err)
	}
	for i := range out.Results {
		if out.Results[i].MatchedBy == "" {
			out.Results[i].MatchedBy = out.MatchedBy
		}
	}
	return out.Results
}

// stop closes serve's stdin and returns its exit code.
func (s *served) stop() int {
	s.t.Helper()
	s.in.Close()
	select {
	case code := <-s.code:
		return code
	case <-s.ctx.Done():
		s.t.Fatalf("serve did not exit: %v", s.ctx.Err())
		return 0
	}
}

// syncBuffer is a bytes.Buffer that serve's goroutines may log to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
