package server

import (
	"time"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/search"
)

// view returns the catalog as it stands, nil without one. A handler reads
// it once and passes it on, so one answer never mixes two moments.
func (s *Server) view() *catalog.View {
	if s.opts.Catalog == nil {
		return nil
	}
	return s.opts.Catalog.View()
}

// refIn returns how a sandbox script names a tool ("obj.tool") in v, for
// call examples.
func refIn(v *catalog.View) func(backend, tool string) string {
	if v == nil || v.Table == nil {
		return func(backend, tool string) string { return backend + "." + tool }
	}
	return v.Table.Ref
}

// search ranks v's tools for query and its steps, or the steps split from
// query when there are none (search.SearchTask), timed for telemetry as
// one search; nil without a catalog.
func (s *Server) search(v *catalog.View, query string, steps []string, limit int, boost func(string) float64) []search.Hit {
	if v == nil || v.Search == nil {
		return nil
	}
	start := time.Now()
	hits := search.SearchTask(v.Search.Search, query, steps, search.Options{Limit: limit, Boost: boost})
	if t := s.opts.Telemetry; t != nil {
		t.Searched(time.Since(start))
	}
	return hits
}

// tryAlso suggests distinctive words of a backend in v for a follow-up
// query.
func tryAlso(v *catalog.View, backend, query string, n int) []string {
	if v == nil || v.Search == nil {
		return nil
	}
	return v.Search.TryAlso(backend, query, n)
}

// drifts reports the catalog's drifted backends; nil without a catalog.
func (s *Server) drifts() map[string]catalog.Drift {
	if s.opts.Catalog == nil {
		return nil
	}
	return s.opts.Catalog.Drifts()
}
