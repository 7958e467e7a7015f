package server

import (
	"sync/atomic"
	"testing"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
)

// catalogOf is the real catalog over reg. cfg must name every backend of
// reg: the catalog hides the others.
func catalogOf(t testing.TB, reg *registry.Registry, cfg *config.Config) *catalog.Catalog {
	t.Helper()
	var docs []search.Doc
	for _, tool := range reg.Tools() {
		docs = append(docs, search.NewDoc(tool.Backend, tool.Name, tool.Title, tool.Description, tool.InputSchema))
	}
	return catalog.New(catalog.Options{Registry: reg, Config: cfg, Search: catalog.Lexical(search.Build(docs))})
}

// fixedCatalog serves one view and the drifts a test sets. It stands in
// for the real catalog where that cannot serve: the catalog hides compiled
// backends its config does not name, and finds drift only by asking live
// backends.
type fixedCatalog struct {
	view   *catalog.View
	drifts func() map[string]catalog.Drift
	bare   map[string]bool
	cfg    *config.Config
}

func (c *fixedCatalog) View() *catalog.View { return c.view }

func (c *fixedCatalog) Drifts() map[string]catalog.Drift {
	if c.drifts == nil {
		return nil
	}
	return c.drifts()
}

func (c *fixedCatalog) Bare(backend string) bool {
	if c.cfg != nil {
		b, ok := c.cfg.Backend(backend)
		return ok && b.Bare
	}
	return c.bare[backend]
}

// countingCatalog counts the views read from the real catalog it wraps.
type countingCatalog struct {
	Catalog
	views atomic.Int64
}

func (c *countingCatalog) View() *catalog.View {
	c.views.Add(1)
	return c.Catalog.View()
}

// TestSearchReadsTheViewOnce: search_tools reads the catalog's view once
// per request, however many hits it prints, so hits, examples and
// suggestions come from one moment and a busy catalog is not reloaded per
// hit.
func TestSearchReadsTheViewOnce(t *testing.T) {
	var counted *countingCatalog
	c := newTestServerOver(t, nil, func(cat Catalog) Catalog {
		counted = &countingCatalog{Catalog: cat}
		return counted
	})
	for _, args := range []map[string]any{
		{"task_description": "filler tool", "limit": 5},
		{"task_description": "filler tool", "limit": 5, "brief": false},
	} {
		counted.views.Store(0)
		text := expectText(t, c, "search_tools", args, false, []string{"everything.fillera", "everything.fillerb"}, nil)
		if n := counted.views.Load(); n != 1 {
			t.Errorf("search_tools %v read the view %d times, want 1:\n%s", args, n, text)
		}
	}
}
