package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agnivade/levenshtein"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Sentinels returned (wrapped) by Resolve and Add.
var (
	ErrNotFound  = errors.New("tool not found")
	ErrAmbiguous = errors.New("tool name is ambiguous")
	ErrDuplicate = errors.New("backend already registered")
	// ErrHeldBack marks a tool its backend offers but the gateway holds
	// back (a tool new at run time under drift: pin); it also matches
	// ErrNotFound, since the tool cannot be called.
	ErrHeldBack = errors.New("tool held back pending review")
)

// heldError is Resolve's error for a held-back tool: the reason the
// holder gave, which says what to do instead.
type heldError struct{ reason string }

func (e *heldError) Error() string { return e.reason }

func (e *heldError) Is(target error) bool { return target == ErrHeldBack || target == ErrNotFound }

// Tool is one backend tool as the gateway serves it.
type Tool struct {
	manifest.Tool
	Backend string
}

// ID is the namespaced name, "backend.tool".
func (t *Tool) ID() string { return t.Backend + "." + t.Name }

// Backend is one registered backend and what it recorded.
type Backend struct {
	// Compiled is true for backends generated into the binary and false for
	// those added at run time by register_manual.
	Compiled bool
	Manifest *manifest.Manifest
}

// Name is the backend's configured name.
func (b *Backend) Name() string { return b.Manifest.Backend }

// Registry is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	backends map[string]*Backend
	tools    map[string]*Tool    // by ID
	bare     map[string][]string // bare name -> IDs publishing it
	sorted   []*Tool             // cache of all tools by ID; nil when stale
	// held are tools known but not served, by backend then tool name:
	// the reason Resolve gives for each (Hold).
	held map[string]map[string]string
	// heldParams are parameters live tools added that are not accepted,
	// by tool ID (HoldParams).
	heldParams map[string][]string
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		backends: map[string]*Backend{},
		tools:    map[string]*Tool{},
		bare:     map[string][]string{},
	}
}

// Add registers a backend and its tools. It fails if the name is taken.
func (r *Registry) Add(m *manifest.Manifest, compiled bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.backends[m.Backend]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, m.Backend)
	}
	r.insertLocked(m, compiled)
	return nil
}

// Replace swaps a backend's recorded tools (a live tool list that drifted
// from the compiled one), keeping its Compiled flag. It adds the backend if
// it was absent.
func (r *Registry) Replace(m *manifest.Manifest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	compiled := false
	if old, ok := r.backends[m.Backend]; ok {
		compiled = old.Compiled
		r.removeLocked(m.Backend)
	}
	r.insertLocked(m, compiled)
}

// Hold sets the tools of a backend that exist but are not served, each
// with the reason Resolve reports for it instead of "not found" (nil or
// empty clears them). They stay out of Tools and every listing.
func (r *Registry) Hold(backend string, reasons map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(reasons) == 0 {
		delete(r.held, backend)
		return
	}
	if r.held == nil {
		r.held = map[string]map[string]string{}
	}
	r.held[backend] = reasons
}

// HoldParams sets, by tool name, the parameters a backend's live tools
// added to their reviewed input schemas that calls may not pass (drift:
// pin), replacing the backend's earlier set; nil clears it. HeldArgs
// finds them in a call's arguments.
func (r *Registry) HoldParams(backend string, params map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.heldParams {
		if strings.HasPrefix(id, backend+".") {
			delete(r.heldParams, id)
		}
	}
	for tool, ps := range params {
		if len(ps) == 0 {
			continue
		}
		if r.heldParams == nil {
			r.heldParams = map[string][]string{}
		}
		r.heldParams[backend+"."+tool] = slices.Clone(ps)
	}
}

// HeldArgs returns the held-back parameters (HoldParams) of tool id that
// args, a JSON object, passes, sorted; none for arguments it cannot read,
// which validation reports.
func (r *Registry) HeldArgs(id string, args json.RawMessage) []string {
	r.mu.RLock()
	ps := r.heldParams[id]
	r.mu.RUnlock()
	if len(ps) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	for _, p := range ps {
		if _, ok := m[p]; ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// heldLocked returns the reason a held-back tool is not served.
func (r *Registry) heldLocked(backend, tool string) (string, bool) {
	reason, ok := r.held[backend][tool]
	return reason, ok
}

// Remove drops a backend and its tools; it reports whether one was there.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, name)
	for id := range r.heldParams {
		if strings.HasPrefix(id, name+".") {
			delete(r.heldParams, id)
		}
	}
	if _, ok := r.backends[name]; !ok {
		return false
	}
	r.removeLocked(name)
	return true
}

func (r *Registry) insertLocked(m *manifest.Manifest, compiled bool) {
	r.backends[m.Backend] = &Backend{Compiled: compiled, Manifest: m}
	for _, mt := range m.Tools {
		t := &Tool{Tool: mt, Backend: m.Backend}
		r.tools[t.ID()] = t
		r.bare[t.Name] = append(r.bare[t.Name], t.ID())
	}
	r.sorted = nil
}

func (r *Registry) removeLocked(name string) {
	b := r.backends[name]
	delete(r.backends, name)
	for _, mt := range b.Manifest.Tools {
		id := name + "." + mt.Name
		delete(r.tools, id)
		ids := slices.DeleteFunc(r.bare[mt.Name], func(s string) bool { return s == id })
		if len(ids) == 0 {
			delete(r.bare, mt.Name)
		} else {
			r.bare[mt.Name] = ids
		}
	}
	r.sorted = nil
}

// Resolve finds a tool by "backend.tool" or by a bare name that exactly one
// backend publishes. Errors wrap ErrNotFound or ErrAmbiguous and say what
// to call instead.
func (r *Registry) Resolve(name string) (*Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.tools[name]; ok {
		return t, nil
	}
	if ids := r.bare[name]; len(ids) == 1 {
		return r.tools[ids[0]], nil
	} else if len(ids) > 1 {
		ids = slices.Clone(ids)
		slices.Sort(ids)
		return nil, fmt.Errorf("%w: %q is published by %d backends; use one of %s",
			ErrAmbiguous, name, len(ids), strings.Join(ids, ", "))
	}
	if b, tool, ok := strings.Cut(name, "."); ok {
		if reason, ok := r.heldLocked(b, tool); ok {
			return nil, &heldError{reason}
		}
		if _, known := r.backends[b]; !known {
			return nil, fmt.Errorf("%w: no backend named %q%s", ErrNotFound, b, r.hintLocked(b, r.backendNamesLocked()))
		}
		if ids := r.bare[tool]; len(ids) > 0 {
			return nil, fmt.Errorf("%w: backend %q has no tool %q; it is published as %s", ErrNotFound, b, tool, strings.Join(ids, ", "))
		}
		return nil, fmt.Errorf("%w: backend %q has no tool %q%s", ErrNotFound, b, tool, r.hintLocked(name, r.idsLocked()))
	}
	for _, b := range slices.Sorted(maps.Keys(r.held)) {
		if reason, ok := r.heldLocked(b, name); ok {
			return nil, &heldError{reason}
		}
	}
	return nil, fmt.Errorf("%w: %q%s", ErrNotFound, name, r.hintLocked(name, r.idsLocked()))
}

// hintLocked suggests the closest known names, or tells the model how to
// look tools up when nothing is close.
func (r *Registry) hintLocked(name string, candidates []string) string {
	if s := Closest(name, candidates, 3); len(s) > 0 {
		return "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return "; call search_tools to find tools by task, or list_tools_meta to list them"
}

// Closest returns up to n candidates within a small edit distance of name,
// nearest first. Short names get a tighter bound so that "ls" does not
// suggest every two-letter tool.
func Closest(name string, candidates []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	limit := max(2, len(name)/3)
	var hits []scored
	lower := strings.ToLower(name)
	for _, c := range candidates {
		cl := strings.ToLower(c)
		d := levenshtein.ComputeDistance(lower, cl)
		// Also compare against the tool part of an ID so that a bare
		// misspelling finds "backend.tool".
		if _, tool, ok := strings.Cut(cl, "."); ok && !strings.Contains(lower, ".") {
			d = min(d, levenshtein.ComputeDistance(lower, tool))
		}
		if d <= limit {
			hits = append(hits, scored{c, d})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].s < hits[j].s
	})
	out := make([]string, 0, min(n, len(hits)))
	for _, h := range hits[:min(n, len(hits))] {
		out = append(out, h.s)
	}
	return out
}

func (r *Registry) idsLocked() []string {
	ids := make([]string, 0, len(r.tools))
	for id := range r.tools {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (r *Registry) backendNamesLocked() []string {
	names := make([]string, 0, len(r.backends))
	for n := range r.backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Tools returns every tool sorted by ID. The slice is shared: do not modify.
func (r *Registry) Tools() []*Tool {
	r.mu.RLock()
	if s := r.sorted; s != nil {
		r.mu.RUnlock()
		return s
	}
	r.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		s := make([]*Tool, 0, len(r.tools))
		for _, t := range r.tools {
			s = append(s, t)
		}
		slices.SortFunc(s, func(a, b *Tool) int { return strings.Compare(a.ID(), b.ID()) })
		r.sorted = s
	}
	return r.sorted
}

// Backend returns a registered backend.
func (r *Registry) Backend(name string) (*Backend, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.backends[name]
	return b, ok
}

// Backends returns every backend sorted by name.
func (r *Registry) Backends() []*Backend {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Backend, 0, len(r.backends))
	for _, n := range r.backendNamesLocked() {
		out = append(out, r.backends[n])
	}
	return out
}

// BackendNames returns the registered backend names, sorted.
func (r *Registry) BackendNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.backendNamesLocked()
}
