package emit

import (
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
	"github.com/kilnmcp/kiln/runtime/search/semantic"
	"github.com/kilnmcp/kiln/runtime/search/static"
)

// searchDocs lists the search documents of every compiled tool, by backend
// then tool name. runtime/search builds both the documents (search.NewDoc)
// and the frozen bytes, so the gateway reads the index with the code that
// wrote it and the format has one owner.
func searchDocs(ms []*manifest.Manifest) []search.Doc {
	var docs []search.Doc
	for _, m := range ms {
		tools := slices.Clone(m.Tools)
		slices.SortFunc(tools, func(a, b manifest.Tool) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range tools {
			docs = append(docs, search.NewDoc(m.Backend, t.Name, t.Title, t.Description, t.InputSchema))
		}
	}
	return docs
}

// toolVectors embeds every document's semantic.ToolText and freezes the
// vectors with the model they came from, so the gateway can refuse a
// different model at start-up.
func toolVectors(docs []search.Doc, o *VectorOptions) ([]byte, error) {
	ids := make([]string, len(docs))
	texts := make([]string, len(docs))
	for i, d := range docs {
		ids[i], texts[i] = d.ID, semantic.ToolText(d.Name, d.Description)
	}
	v, err := semantic.BuildVectors(o.Embedder, ids, texts, o.Model, o.SHA256)
	if err != nil {
		return nil, err
	}
	return v.MarshalBinary()
}

// staticTable cuts the word vectors to the compiled tools' words plus the
// most frequent ones and fits the common component on those tools
// (static.CutFor), from the same semantic.ToolText the gateway embeds
// run-time tools from.
func staticTable(docs []search.Doc, o *StaticOptions) ([]byte, error) {
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = semantic.ToolText(d.Name, d.Description)
	}
	return static.CutFor(o.Raw, o.Source, o.SHA256, texts, o.Top).MarshalBinary()
}
