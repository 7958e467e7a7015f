package emit

import (
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/route"
)

// Warnings lists resource URIs and templates that two backends claim, or
// that kiln will not route, by the rule kiln serve routes reads with: the
// first declared backend wins. Emit still succeeds; kiln-gen prints them.
func Warnings(ms []*manifest.Manifest) []string {
	bs := make([]route.Backend, 0, len(ms))
	for _, m := range ms {
		if m != nil {
			bs = append(bs, route.FromManifest(m))
		}
	}
	return route.Problems(bs)
}
