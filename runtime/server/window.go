package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kilnmcp/kiln/runtime/registry"
)

// The window for people (runtime/console) reads the gateway through these:
// the same views, policy and scrubbing the MCP resources and meta-tools
// use, so a person sees what an agent with the same identity would.

// Resource returns the contents of one of kiln's own resources (kiln://…,
// templates included) for ctx's identity, scrubbed as resources/read
// scrubs them (backend state carries stderr tails and errors): a string
// for Markdown and text, else json.RawMessage.
func (s *Server) Resource(ctx context.Context, uri string) (any, error) {
	v, err := s.resource(ctx, uri)
	if err != nil {
		return nil, errors.New(s.opts.Scrubber.String(err.Error()))
	}
	if text, ok := v.(string); ok {
		return s.opts.Scrubber.String(text), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	return json.RawMessage(s.opts.Scrubber.String(string(raw))), nil
}

func (s *Server) resource(ctx context.Context, uri string) (any, error) {
	static, templates := s.resourceDefs()
	for _, d := range static {
		if d.uri == uri {
			return d.get(ctx, uri)
		}
	}
	// The longest template prefix first: kiln://backend/x/tools before
	// kiln://backend/x.
	var best *resourceDef
	for i, d := range templates {
		prefix, suffix, _ := strings.Cut(d.uri, "{")
		_, suffix, _ = strings.Cut(suffix, "}")
		if strings.HasPrefix(uri, prefix) && strings.HasSuffix(uri, suffix) && len(uri) > len(prefix)+len(suffix) &&
			!strings.Contains(strings.TrimSuffix(strings.TrimPrefix(uri, prefix), suffix), "/") &&
			(best == nil || len(d.uri) > len(best.uri)) {
			best = &templates[i]
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no resource %q", uri)
	}
	return best.get(ctx, uri)
}

// PeopleHit is one ranked search_tools hit, with what an agent is not
// shown: the score and which retriever matched.
type PeopleHit struct {
	Tool        string  `json:"tool"`
	Backend     string  `json:"backend"`
	Score       float64 `json:"score"`
	MatchedBy   string  `json:"matched_by"`
	Description string  `json:"description"`
	Example     string  `json:"example"`
}

// SearchPeople ranks the tools ctx's identity may see for query, as
// search_tools does.
func (s *Server) SearchPeople(ctx context.Context, query string, limit int) []PeopleHit {
	v := s.view()
	hits := s.search(v, query, nil, min(max(limit, 1), maxSearchLimit), s.boostFor(ctx))
	ref := refIn(v)
	out := []PeopleHit{}
	for _, h := range hits {
		t, err := s.resolveVisible(ctx, h.ID)
		if err != nil {
			continue
		}
		out = append(out, PeopleHit{Tool: t.ID(), Backend: t.Backend, Score: h.Score, MatchedBy: h.Tier.String(),
			Description: FirstSentence(t.Description, 300), Example: t.Example(ref)})
	}
	return out
}

// ToolSchema is one tool in full (tool_info detail: full) for ctx's
// identity, or false when it does not exist for it.
func (s *Server) ToolSchema(ctx context.Context, id string) (json.RawMessage, bool) {
	t, err := s.resolveVisible(ctx, id)
	if err != nil {
		return nil, false
	}
	b, err := json.Marshal(s.fullTool(t))
	return b, err == nil
}

// ToolDocs is every tool ctx's identity may see as Markdown: the name,
// description, parameters and a call example, as tool_info gives them.
func (s *Server) ToolDocs(ctx context.Context) string {
	var b strings.Builder
	b.WriteString("# Tools\n")
	for _, t := range s.visibleTools(ctx) {
		writeToolDoc(&b, t, s.ref)
	}
	return b.String()
}

func writeToolDoc(b *strings.Builder, t *registry.Tool, ref func(backend, tool string) string) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n", t.ID(), strings.TrimSpace(t.Description))
	if ps := params(t); len(ps) > 0 {
		b.WriteString("\n| parameter | type | required | description |\n|---|---|---|---|\n")
		for _, p := range ps {
			req := ""
			if p.Required {
				req = "yes"
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", p.Name, p.Type, req, strings.ReplaceAll(strings.ReplaceAll(p.Description, "\n", " "), "|", `\|`))
		}
	}
	fmt.Fprintf(b, "\nExample:\n\n```ts\n%s\n```\n", t.Example(ref))
}
