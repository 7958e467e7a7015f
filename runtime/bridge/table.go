package bridge

import (
	"slices"
	"strings"
	"sync"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Backend is one backend as the preamble exposes it.
type Backend struct {
	Name  string
	Tools []manifest.Tool
}

// Table maps the identifiers a preamble binds back to original names. It is
// immutable and safe for concurrent use.
type Table struct {
	backends []*backendEntry // sorted by name
	byIdent  map[string]*backendEntry
	byName   map[string]*backendEntry
	bindings func() []Binding
}

// Binding is one backend object as the preamble binds it on globalThis:
// the names a script reaches it by and the tool properties it holds. The
// sandbox's error hints read these instead of running the preamble.
type Binding struct {
	// Name is the backend's original name; Ident is the identifier bound.
	Name  string `json:"name"`
	Ident string `json:"ident"`
	// Tools are the object's own properties: each tool's identifier, then
	// the original names that differ from theirs.
	Tools []string `json:"tools"`
}

type backendEntry struct {
	name, ident string
	tools       []manifest.Tool // sorted by name, duplicates dropped
	toolIdent   map[string]string
	toolByIdent map[string]string
}

// Lookup computes the identifiers Preamble would bind for backends. Duplicate
// backend names (and duplicate tool names within a backend) keep the first.
func Lookup(backends []Backend) *Table {
	sorted := slices.Clone(backends)
	slices.SortStableFunc(sorted, func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
	sorted = slices.CompactFunc(sorted, func(a, b Backend) bool { return a.Name == b.Name })
	names := make([]string, len(sorted))
	for i, b := range sorted {
		names[i] = b.Name
	}
	idents := assign(names)
	t := &Table{
		byIdent: make(map[string]*backendEntry, len(sorted)),
		byName:  make(map[string]*backendEntry, len(sorted)),
	}
	for _, b := range sorted {
		tools := slices.Clone(b.Tools)
		slices.SortStableFunc(tools, func(x, y manifest.Tool) int { return strings.Compare(x.Name, y.Name) })
		tools = slices.CompactFunc(tools, func(x, y manifest.Tool) bool { return x.Name == y.Name })
		toolNames := make([]string, len(tools))
		for i, tl := range tools {
			toolNames[i] = tl.Name
		}
		e := &backendEntry{
			name:        b.Name,
			ident:       idents[b.Name],
			tools:       tools,
			toolIdent:   assign(toolNames),
			toolByIdent: make(map[string]string, len(tools)),
		}
		for n, id := range e.toolIdent {
			e.toolByIdent[id] = n
		}
		t.backends = append(t.backends, e)
		t.byIdent[e.ident] = e
		t.byName[e.name] = e
	}
	t.bindings = sync.OnceValue(t.computeBindings)
	return t
}

// Bindings lists what the preamble binds, one entry per backend in the
// order the preamble binds them. Besides Ident, the preamble binds Name
// too when it differs and no host global holds it already. The slice is
// shared: callers must not change it.
func (t *Table) Bindings() []Binding { return t.bindings() }

func (t *Table) computeBindings() []Binding {
	out := make([]Binding, 0, len(t.backends))
	for _, e := range t.backends {
		b := Binding{Name: e.name, Ident: e.ident, Tools: make([]string, 0, len(e.tools))}
		for _, tl := range e.tools {
			b.Tools = append(b.Tools, e.toolIdent[tl.Name])
		}
		for _, tl := range e.tools {
			if e.toolIdent[tl.Name] != tl.Name {
				b.Tools = append(b.Tools, tl.Name)
			}
		}
		out = append(out, b)
	}
	return out
}

// Resolve maps `obj.tool` as written in a script to the backend and tool it
// calls. Both parts may be the bound identifiers or the original names (as in
// `globalThis["my-backend"]["get-data"]`); identifiers win when both match.
func (t *Table) Resolve(objIdent, toolIdent string) (backend, tool string, ok bool) {
	e := t.backendEntry(objIdent)
	if e == nil {
		return "", "", false
	}
	if n, ok := e.toolByIdent[toolIdent]; ok {
		return e.name, n, true
	}
	if _, ok := e.toolIdent[toolIdent]; ok {
		return e.name, toolIdent, true
	}
	return "", "", false
}

// BackendIdent returns the identifier bound for a backend name.
func (t *Table) BackendIdent(backend string) (string, bool) {
	e, ok := t.byName[backend]
	if !ok {
		return "", false
	}
	return e.ident, true
}

// ToolIdent returns the property name a tool has on its backend's object.
func (t *Table) ToolIdent(backend, tool string) (string, bool) {
	e, ok := t.byName[backend]
	if !ok {
		return "", false
	}
	id, ok := e.toolIdent[tool]
	return id, ok
}

// Ref returns how a script calls the tool, "obj.tool", with the
// identifiers the preamble binds (collisions numbered as Preamble numbers
// them). Names the table does not hold fall back to Ident.
func (t *Table) Ref(backend, tool string) string {
	obj, ok := t.BackendIdent(backend)
	if !ok {
		obj = Ident(backend)
	}
	prop, ok := t.ToolIdent(backend, tool)
	if !ok {
		prop = Ident(tool)
	}
	return obj + "." + prop
}

func (t *Table) backendEntry(s string) *backendEntry {
	if e, ok := t.byIdent[s]; ok {
		return e
	}
	return t.byName[s]
}
