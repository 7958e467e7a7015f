package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kilnmcp/kiln/runtime/search"
)

// benchTool is one line of tools.jsonl.
type benchTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Query is one line of queries.jsonl.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
	// Groups lists interchangeable tools: retrieving any member satisfies
	// the group. Absent, each relevant tool is its own group.
	Groups [][]string `json:"relevant_groups,omitempty"`
	Steps  []string   `json:"steps,omitempty"`
}

// labels returns the query's relevance groups.
func (q *Query) labels() [][]string {
	if len(q.Groups) > 0 {
		return q.Groups
	}
	out := make([][]string, len(q.Relevant))
	for i, r := range q.Relevant {
		out[i] = []string{r}
	}
	return out
}

// LoadTools reads tools.jsonl into the Docs kiln-gen emit would index.
func LoadTools(path string) ([]search.Doc, error) {
	var docs []search.Doc
	err := eachLine(path, func(line []byte) error {
		var t benchTool
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		if t.Server == "" || t.Name == "" {
			return fmt.Errorf("tool without server or name")
		}
		docs = append(docs, search.NewDoc(t.Server, t.Name, t.Title, t.Description, t.InputSchema))
		return nil
	})
	return docs, err
}

// LoadQueries reads queries.jsonl.
func LoadQueries(path string) ([]Query, error) {
	var qs []Query
	err := eachLine(path, func(line []byte) error {
		var q Query
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if len(q.Relevant) == 0 && len(q.Groups) == 0 {
			return fmt.Errorf("query %q has no relevant tools", q.ID)
		}
		qs = append(qs, q)
		return nil
	})
	return qs, err
}

func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
