package route

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Reserved is the scheme of kiln's own resources; no backend may claim it.
const Reserved = "kiln://"

// Backend is what one backend offers for routing.
type Backend struct {
	Name      string
	URIs      []string
	Templates []string
}

// FromManifest takes the routing facts of a manifest.
func FromManifest(m *manifest.Manifest) Backend {
	b := Backend{Name: m.Backend}
	for _, r := range m.Resources {
		b.URIs = append(b.URIs, r.URI)
	}
	for _, t := range m.ResourceTemplates {
		b.Templates = append(b.Templates, t.URITemplate)
	}
	return b
}

// Table answers which backend owns a URI. It is immutable.
type Table struct {
	exact     map[string]string // URI -> first backend listing it
	templates []template        // in backend order, then listing order
	byText    map[string]string // template text -> first backend listing it
}

type template struct {
	backend, text string
	t             *uritemplate.Template
}

// New builds a table; backends are ordered by name, the order kiln's config
// declares them in, so the first declared wins a URI two claim.
func New(backends []Backend) *Table {
	t, _ := build(backends, false)
	return t
}

// NewWithProblems is New and Problems in one pass, each template parsed
// and compiled once.
func NewWithProblems(backends []Backend) (*Table, []string) {
	return build(backends, true)
}

// build adds the backends in declared order to a table, listing the
// problems each adds to those declared before it when report is set: the
// table grown as the backends advance (one built afresh for each backend
// made start-up quadratic in the fleet: 40 ms of a 1,246-backend start,
// BenchmarkStartFleet).
func build(backends []Backend, report bool) (*Table, []string) {
	bs := slices.Clone(backends)
	slices.SortStableFunc(bs, func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
	t := newTable()
	var out []string
	for _, b := range bs {
		if !report {
			t.add(b)
			continue
		}
		out = t.addReporting(b, out)
	}
	return t, out
}

func newTable() *Table {
	return &Table{exact: map[string]string{}, byText: map[string]string{}}
}

// add gives t the URIs and templates of b that no backend added before
// claims, and returns why Parse refused any of those templates.
func (t *Table) add(b Backend) (refused map[string]error) {
	for _, u := range b.URIs {
		if _, taken := t.exact[u]; !taken && !strings.HasPrefix(u, Reserved) {
			t.exact[u] = b.Name
		}
	}
	for _, text := range b.Templates {
		if _, taken := t.byText[text]; taken || strings.HasPrefix(text, Reserved) {
			continue
		}
		tpl, err := Parse(text)
		if err != nil {
			if refused == nil {
				refused = map[string]error{}
			}
			refused[text] = err
			continue
		}
		t.byText[text] = b.Name
		t.templates = append(t.templates, template{backend: b.Name, text: text, t: tpl})
	}
	return refused
}

// Owner returns the backend that serves uri: the first to list it, else
// the first whose template matches it. kiln:// URIs have no owner.
func (t *Table) Owner(uri string) (string, bool) {
	if strings.HasPrefix(uri, Reserved) {
		return "", false
	}
	if b, ok := t.exact[uri]; ok {
		return b, true
	}
	for _, tpl := range t.templates {
		if Match(tpl.t, uri) {
			return tpl.backend, true
		}
	}
	return "", false
}

// TemplateOwner returns the backend that listed the template text first.
func (t *Table) TemplateOwner(text string) (string, bool) {
	b, ok := t.byText[text]
	return b, ok
}

// ErrNoMatcher is Parse's error for a template that is valid RFC 6570
// but that no regexp can match by: the library builds one that repeats an
// expression's variable list, and Go's regexp allows 1,000 repeats.
var ErrNoMatcher = errors.New("kiln cannot build a matcher for it")

// Parse reads an RFC 6570 template and compiles the regexp Match uses. The
// library's own Regexp panics on a template past regexp's limit, wherever
// it is first asked (mcp-go asks on every templated read, holding a lock);
// a backend's template is checked here first, so no such template goes
// further than this.
func Parse(text string) (tpl *uritemplate.Template, err error) {
	if tpl, err = uritemplate.New(text); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			tpl, err = nil, ErrNoMatcher
		}
	}()
	tpl.Regexp()
	return tpl, nil
}

// Match reports whether uri is an expansion of tpl. The library's regexp
// is anchored and covers operators of levels 1-3 ({var}, {+var}, {#var},
// {.var}, {/var}, {;var}, {?var}, {&var}).
func Match(tpl *uritemplate.Template, uri string) bool {
	return tpl.Regexp().MatchString(uri)
}

// Problems lists what a reviewer should know about the backends' URIs:
// a URI or template two backends claim (the first declared wins), a URI
// that a template of an earlier backend already matches, a template that
// does not parse, and claims on kiln's own kiln:// scheme, which kiln keeps.
func Problems(backends []Backend) []string {
	_, out := build(backends, true)
	return out
}

// addReporting is add, appending to out what b's URIs and templates clash
// with in t, the backends declared before b.
func (t *Table) addReporting(b Backend, out []string) []string {
	for _, u := range b.URIs {
		if strings.HasPrefix(u, Reserved) {
			out = append(out, fmt.Sprintf("backend %q lists resource %q on kiln's own kiln:// scheme; kiln serves its own resource there and hides this one", b.Name, u))
		} else if owner, ok := t.Owner(u); ok {
			out = append(out, fmt.Sprintf("resource %q is claimed by backends %q and %q; reads go to %q, declared first", u, owner, b.Name, owner))
		}
	}
	// The owners before b, then b's own templates parsed once, by add.
	owners := make([]string, len(b.Templates))
	for i, text := range b.Templates {
		owners[i], _ = t.TemplateOwner(text)
	}
	refused := t.add(b)
	for i, text := range b.Templates {
		switch err := refused[text]; {
		case strings.HasPrefix(text, Reserved):
			out = append(out, fmt.Sprintf("backend %q lists resource template %q on kiln's own kiln:// scheme; kiln hides it", b.Name, text))
		case errors.Is(err, ErrNoMatcher):
			out = append(out, fmt.Sprintf("backend %q lists resource template %q: it is RFC 6570, but %v (more than 1,000 variables in one expression); kiln hides it and routes no read by it", b.Name, text, ErrNoMatcher))
		case err != nil:
			out = append(out, fmt.Sprintf("backend %q lists resource template %q, which is not an RFC 6570 template (%v); kiln hides it and routes no read by it", b.Name, text, err))
		case owners[i] != "":
			out = append(out, fmt.Sprintf("resource template %q is listed by backends %q and %q; reads go to %q, declared first", text, owners[i], b.Name, owners[i]))
		}
	}
	return out
}
