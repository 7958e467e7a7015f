package registry

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// MaxExposedName is the longest tool name every major LLM API accepts
// (^[a-zA-Z0-9_-]{1,64}$; several refuse a dot, so "backend.tool" IDs
// cannot be shown to a model as they are).
const MaxExposedName = 64

// exposedSep joins backend and tool in an exposed name. A double
// underscore, so that a backend's prefix never ends inside a tool name
// that starts with one underscore, and so that no meta-tool name (which
// holds single underscores only) can be produced by a prefixed tool.
const exposedSep = "__"

// suffixLen is how many hex digits of the ID's hash a colliding name gets;
// longer suffixes are tried only when the short one is itself taken.
const suffixLen = 6

// maxSuffixLen bounds the lengthening: 128 bits of hash cannot collide by
// chance, and the base keeps half of MaxExposedName.
const maxSuffixLen = 32

// ExposeTool is one tool to name: its backend, its own name, and whether
// the backend is bare (tools shown under their own names).
type ExposeTool struct {
	Backend, Tool string
	Bare          bool
}

// ID is the tool's namespaced ID, "backend.tool".
func (t ExposeTool) ID() string { return t.Backend + "." + t.Tool }

// Collision is a name two or more tools would have had; each of them got a
// suffixed name instead (or the one name already given out kept it).
type Collision struct {
	Name string
	// IDs are the tools of this batch that wanted Name, sorted.
	IDs []string
	// Taken is true when Name was already given out before this batch.
	Taken bool
}

// ExposedBase is a tool's exposed name before collisions and length are
// handled: "backend__tool", or the tool's own name for a bare backend,
// with every character outside [a-zA-Z0-9_-] mapped to "_".
func ExposedBase(t ExposeTool) string {
	s := t.Tool
	if !t.Bare {
		s = t.Backend + exposedSep + t.Tool
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// ValidExposedName reports whether name is accepted by every major LLM API.
func ValidExposedName(name string) bool {
	if name == "" || len(name) > MaxExposedName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ExposeNames names one batch of tools, returning exposed names by ID and
// the collisions it resolved. taken reports names already given out (to
// earlier batches, or reserved such as the meta-tools); nil means none.
//
// The result depends only on the set of tools and on taken, never on their
// order: a tool keeps its base name unless another tool of the batch wants
// the same name, the name is taken, or it is longer than MaxExposedName; it
// then gets its base cut short plus "_" and the first hex digits of the
// SHA-256 of its ID, so the suffix is the same on every machine and in
// every run. Tools of later batches never take a name from an earlier one,
// which keeps names stable while backends come and go.
func ExposeNames(tools []ExposeTool, taken func(string) bool) (map[string]string, []Collision) {
	if taken == nil {
		taken = func(string) bool { return false }
	}
	type entry struct {
		id, base string
		bare     bool
	}
	sorted := make([]entry, len(tools))
	for i, t := range tools {
		sorted[i] = entry{id: t.ID(), base: ExposedBase(t), bare: t.Bare}
	}
	// A tool given twice is named once, as the non-bare copy if there is
	// one, whatever the order.
	slices.SortFunc(sorted, func(a, b entry) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(a.bare), boolInt(b.bare))
	})
	sorted = slices.CompactFunc(sorted, func(a, b entry) bool { return a.id == b.id })

	wants := map[string][]string{} // base name -> IDs wanting it
	base := make(map[string]string, len(sorted))
	for _, t := range sorted {
		base[t.id] = t.base
		wants[t.base] = append(wants[t.base], t.id)
	}
	out := make(map[string]string, len(sorted))
	used := map[string]bool{}
	var collisions []Collision
	var suffixed []string
	for _, t := range sorted {
		id, b := t.id, t.base
		clash := len(wants[b]) > 1 || taken(b)
		if !clash && len(b) <= MaxExposedName {
			out[id] = b
			used[b] = true
			continue
		}
		suffixed = append(suffixed, id)
	}
	for _, b := range slices.Sorted(maps.Keys(wants)) {
		if ids := wants[b]; len(ids) > 1 || taken(b) {
			collisions = append(collisions, Collision{Name: b, IDs: ids, Taken: taken(b)})
		}
	}
	// Suffixed names go second, so that a suffixed name that happens to
	// equal another tool's plain name loses, deterministically.
	for _, id := range suffixed {
		for n := suffixLen; ; n += 2 {
			name := withSuffix(base[id], id, n)
			if n >= maxSuffixLen || !used[name] && !taken(name) {
				out[id] = name
				used[name] = true
				break
			}
		}
	}
	return out, collisions
}

// withSuffix cuts base so that base + "_" + n hex digits fits
// MaxExposedName, and appends them.
func withSuffix(base, id string, n int) string {
	sum := sha256.Sum256([]byte(id))
	hx := hex.EncodeToString(sum[:])[:n]
	if keep := MaxExposedName - 1 - n; len(base) > keep {
		base = base[:keep] // ASCII only: ExposedBase mapped everything else
	}
	return base + "_" + hx
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
