package diff

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Mode says under which drift mode a running kiln serves a backend, and
// where that comes from (e.g. "gateway.drift", "backends.memory.drift",
// "default").
type Mode func(backend string) (mode, source string)

// RenderServing writes what a running kiln built from the committed
// manifests does with changes, backend by backend, under its drift mode:
// under pin, each new tool, resource, template or prompt is held back (not
// listed, searchable or callable) and each changed or removed one is
// served as reviewed, until the changes are recorded and compiled in with
// acceptCmd; under warn and follow the live lists are served. A backend
// with no committed manifest has no review and is served live whatever
// its mode. Changes to the backend itself (server version, instructions)
// are not served to clients and are left out.
func RenderServing(w io.Writer, changes []Change, mode Mode, acceptCmd string) error {
	cs := slices.Clone(changes)
	slices.SortFunc(cs, compare)
	var b strings.Builder
	b.WriteString("What a running kiln built from these manifests serves meanwhile:\n")
	for rest := cs; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].Backend == rest[0].Backend {
			n++
		}
		group := rest[:n]
		rest = rest[n:]
		name := group[0].Backend
		m, source := mode(name)
		if isNewBackend(group) {
			fmt.Fprintf(&b, "  %s: not compiled in, so it has no review: served live whatever drift says\n", clean(displayName(name)))
			continue
		}
		if isGoneBackend(group) {
			continue
		}
		items := subjects(group)
		if len(items) == 0 {
			continue
		}
		switch m {
		case "pin":
			fmt.Fprintf(&b, "  %s (drift: pin, from %s): held back pending review\n", clean(displayName(name)), source)
			for _, it := range items {
				fmt.Fprintf(&b, "    %-34s %s\n", clean(it.label), it.pinned())
			}
		case "warn":
			fmt.Fprintf(&b, "  %s (drift: warn, from %s): served live, the drift logged (%s)\n", clean(displayName(name)), source, plural(len(items), "item", "items"))
		default:
			fmt.Fprintf(&b, "  %s (drift: %s, from %s): served live, silently (%s)\n", clean(displayName(name)), clean(m), source, plural(len(items), "item", "items"))
		}
	}
	fmt.Fprintf(&b, "Accept what is held back with `%s` (it records the live backends into manifests/ for this review) and rebuild kiln.\n", acceptCmd)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("render serving: %w", err)
	}
	return nil
}

// item is one tool, resource, template or prompt with changes.
type item struct {
	label          string
	added, removed bool
	kinds          []string
}

func (it item) pinned() string {
	switch {
	case it.added && strings.HasPrefix(it.label, "tool "):
		return "new: not listed, searchable or callable"
	case it.added:
		return "new: not listed, so it cannot be read or got"
	case it.removed:
		return "removed live: still served as reviewed (calls fail once the backend stops answering)"
	}
	msg := "changed (" + strings.Join(it.kinds, ", ") + "): served as reviewed"
	if strings.HasPrefix(it.label, "tool ") && slices.Contains(it.kinds, ParamAdded.String()) {
		msg += "; calls passing the new parameters are refused"
	}
	return msg
}

// subjects folds a backend's changes into one item per subject, in order.
func subjects(group []Change) []item {
	var out []item
	for _, c := range group {
		if c.Subject == SubjectBackend {
			continue
		}
		label := c.Subject.String() + " " + displayName(c.Name)
		if len(out) == 0 || out[len(out)-1].label != label {
			out = append(out, item{label: label})
		}
		it := &out[len(out)-1]
		switch c.Kind {
		case Added:
			it.added = true
		case Removed:
			it.removed = true
		default:
			if k := c.Kind.String(); !slices.Contains(it.kinds, k) {
				it.kinds = append(it.kinds, k)
			}
		}
	}
	return out
}

func isNewBackend(group []Change) bool {
	return slices.ContainsFunc(group, func(c Change) bool { return c.Subject == SubjectBackend && c.Kind == Added })
}

func isGoneBackend(group []Change) bool {
	return slices.ContainsFunc(group, func(c Change) bool { return c.Subject == SubjectBackend && c.Kind == Removed })
}
