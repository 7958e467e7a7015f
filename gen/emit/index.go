package emit

import (
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/search"
)

// searchIndex freezes the search index of every compiled tool. runtime/search
// builds both the documents (search.NewDoc) and the bytes, so the gateway
// reads the index with the code that wrote it and the format has one owner.
func searchIndex(ms []*manifest.Manifest) ([]byte, error) {
	var docs []search.Doc
	for _, m := range ms {
		tools := slices.Clone(m.Tools)
		slices.SortFunc(tools, func(a, b manifest.Tool) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range tools {
			docs = append(docs, search.NewDoc(m.Backend, t.Name, t.Title, t.Description, t.InputSchema))
		}
	}
	return search.Build(docs).MarshalBinary()
}
