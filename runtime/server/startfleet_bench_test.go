package server

import (
	"cmp"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kilnmcp/kiln/runtime/catalog"
	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/registry"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/benchdata"
)

// BenchmarkStartFleet measures what kiln serve does between exec and its
// first tools/list answer that grows with the compiled fleet, for 5,000
// tools (LiveMCPBench and ToolBench replayed by benchdata.Fleet): register
// every backend's manifest, load the frozen search index (built as kiln-gen
// emit builds it), build the catalog and the server, and answer an
// in-process client's initialize and tools/list. It runs in-process rather
// than by exec (tests/BenchmarkColdStart) because a 5,000-tool kiln would
// have to be emitted and compiled first (minutes on this machine), and the
// exec, Go runtime and config costs it would add do not depend on the fleet;
// BenchmarkColdStart measures those with the repository's compiled fleet.
func BenchmarkStartFleet(b *testing.B) {
	const n = 5000
	fleet := benchdata.Fleet(b, n)
	byBackend := map[string]*manifest.Manifest{}
	var docs []search.Doc
	for _, t := range fleet {
		m := byBackend[t.Server]
		if m == nil {
			m = &manifest.Manifest{Version: 1, Backend: t.Server}
			byBackend[t.Server] = m
		}
		m.Tools = append(m.Tools, manifest.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema})
		docs = append(docs, search.NewDoc(t.Server, t.Name, t.Title, t.Description, t.InputSchema))
	}
	// kiln-gen emit orders documents by backend, then tool name.
	slices.SortFunc(docs, func(x, y search.Doc) int {
		return cmp.Or(cmp.Compare(x.Backend, y.Backend), cmp.Compare(x.Name, y.Name))
	})
	frozen, err := search.Build(docs).MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	data := string(frozen) // generated/searchindex embeds the index as a string
	cfg := &config.Config{Path: "kiln.yaml", Gateway: config.DefaultGateway()}
	manifests := make([]*manifest.Manifest, 0, len(byBackend))
	for _, m := range byBackend {
		manifests = append(manifests, m)
		cfg.Backends = append(cfg.Backends, config.Backend{Name: m.Backend, Transport: config.TransportStdio, Command: "node", Enabled: true})
	}
	b.ReportAllocs()
	for b.Loop() {
		reg := registry.New()
		for _, m := range manifests {
			if err := reg.Add(m, true); err != nil {
				b.Fatal(err)
			}
		}
		ix, err := search.LoadString(data)
		if err != nil {
			b.Fatal(err)
		}
		cat := catalog.New(catalog.Options{Registry: reg, Config: cfg, Search: catalog.Lexical(ix)})
		s := New(Options{Version: "bench", Config: cfg, Registry: reg, Catalog: cat})
		c, err := client.NewInProcessClient(s.mcp)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Initialize(b.Context(), mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		if res, err := c.ListTools(b.Context(), mcp.ListToolsRequest{}); err != nil || len(res.Tools) == 0 {
			b.Fatalf("tools/list: %v", err)
		}
		c.Close()
	}
	b.ReportMetric(float64(len(manifests)), "backends")
	b.ReportMetric(float64(len(frozen))/1e6, "index-MB")
}
