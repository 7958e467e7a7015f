package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Manifests returns the changes from old to new, two recordings of the same
// backend, sorted. A nil old means the backend is new and a nil new that it
// is gone; two nils give no changes. Lists are matched by name (tools,
// prompts) or URI (resources), so their order does not matter; when a list
// holds a name twice, which manifest.Decode rejects, the first entry counts.
func Manifests(old, new *manifest.Manifest) []Change {
	var out []Change
	switch {
	case old == nil && new == nil:
		return nil
	case old == nil:
		out = append(out, Change{Backend: new.Backend, Kind: Added, Severity: Compatible,
			Message: "backend added (" + inventory(new) + ")"})
	case new == nil:
		out = append(out, Change{Backend: old.Backend, Kind: Removed, Severity: Breaking,
			Message: "backend removed (had " + inventory(old) + "); calls to it will fail"})
	default:
		out = compareManifests(old, new)
	}
	slices.SortFunc(out, compare)
	return out
}

// Backends compares two sets of recordings matched by backend name, so a
// backend present on one side only is reported as added or removed. Nil
// entries are skipped.
func Backends(old, new []*manifest.Manifest) []Change {
	byName := func(ms []*manifest.Manifest) map[string]*manifest.Manifest {
		idx := make(map[string]*manifest.Manifest, len(ms))
		for _, m := range ms {
			if m == nil {
				continue
			}
			if _, dup := idx[m.Backend]; !dup {
				idx[m.Backend] = m
			}
		}
		return idx
	}
	o, n := byName(old), byName(new)
	var out []Change
	for _, name := range unionKeys(o, n) {
		out = append(out, Manifests(o[name], n[name])...)
	}
	slices.SortFunc(out, compare)
	return out
}

func inventory(m *manifest.Manifest) string {
	parts := []string{plural(len(m.Tools), "tool", "tools")}
	if n := len(m.Resources); n > 0 {
		parts = append(parts, plural(n, "resource", "resources"))
	}
	if n := len(m.ResourceTemplates); n > 0 {
		parts = append(parts, plural(n, "resource template", "resource templates"))
	}
	if n := len(m.Prompts); n > 0 {
		parts = append(parts, plural(n, "prompt", "prompts"))
	}
	return strings.Join(parts, ", ")
}

func compareManifests(old, new *manifest.Manifest) []Change {
	backend := old.Backend
	var out []Change
	info := func(k Kind, sev Severity, o, n, msg string) {
		out = append(out, Change{Backend: backend, Kind: k, Severity: sev, Old: o, New: n, Message: msg})
	}
	if old.Backend != new.Backend {
		info(Renamed, Info, old.Backend, new.Backend, fmt.Sprintf("backend field changed from %q to %q", old.Backend, new.Backend))
	}
	fields := []struct {
		kind     Kind
		what     string
		old, new string
	}{
		{Server, "server name", old.Server.Name, new.Server.Name},
		{Server, "server version", old.Server.Version, new.Server.Version},
		{Server, "server title", old.Server.Title, new.Server.Title},
		{Protocol, "protocol version", old.ProtocolVersion, new.ProtocolVersion},
		{Transport, "transport", old.Transport, new.Transport},
	}
	for _, f := range fields {
		switch {
		case f.old == f.new:
		case f.old == "":
			info(f.kind, Info, f.old, f.new, fmt.Sprintf("%s set to %q", f.what, f.new))
		case f.new == "":
			info(f.kind, Info, f.old, f.new, fmt.Sprintf("%s %q removed", f.what, f.old))
		default:
			info(f.kind, Info, f.old, f.new, fmt.Sprintf("%s changed from %q to %q", f.what, f.old, f.new))
		}
	}
	if old.Instructions != new.Instructions {
		info(Instructions, Cosmetic, old.Instructions, new.Instructions, textChange("instructions", old.Instructions, new.Instructions))
	}
	out = append(out, compareTools(backend, old.Tools, new.Tools)...)
	out = append(out, compareResources(backend, old.Resources, new.Resources)...)
	out = append(out, compareTemplates(backend, old.ResourceTemplates, new.ResourceTemplates)...)
	out = append(out, comparePrompts(backend, old.Prompts, new.Prompts)...)
	return out
}

// textChange names the direction of a free-text change; the text itself
// travels in Old and New and Render prints it as a line diff.
func textChange(what, old, new string) string {
	switch {
	case old == "":
		return what + " added"
	case new == "":
		return what + " removed"
	}
	return what + " changed"
}

// index maps each key to its first element; see Manifests on duplicates.
func index[T any](items []T, key func(T) string) map[string]T {
	idx := make(map[string]T, len(items))
	for _, it := range items {
		if _, dup := idx[key(it)]; !dup {
			idx[key(it)] = it
		}
	}
	return idx
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func compareTools(backend string, old, new []manifest.Tool) []Change {
	o := index(old, func(t manifest.Tool) string { return t.Name })
	n := index(new, func(t manifest.Tool) string { return t.Name })
	var out []Change
	for _, name := range unionKeys(o, n) {
		base := Change{Backend: backend, Subject: SubjectTool, Name: name}
		ot, inOld := o[name]
		nt, inNew := n[name]
		switch {
		case !inOld:
			out = append(out, with(base, Added, Compatible, "", "", "added"))
		case !inNew:
			out = append(out, with(base, Removed, Breaking, "", "", "removed; calls to it will fail"))
		default:
			out = append(out, compareTool(base, ot, nt)...)
		}
	}
	return out
}

func with(base Change, k Kind, sev Severity, old, new, msg string) Change {
	base.Kind, base.Severity, base.Old, base.New, base.Message = k, sev, old, new, msg
	return base
}

func compareTool(base Change, old, new manifest.Tool) []Change {
	var out []Change
	if old.Description != new.Description {
		out = append(out, with(base, Description, Cosmetic, old.Description, new.Description,
			textChange("description", old.Description, new.Description)))
	}
	if old.Title != new.Title {
		out = append(out, with(base, Title, Cosmetic, old.Title, new.Title,
			fmt.Sprintf("title changed from %q to %q", old.Title, new.Title)))
	}
	out = append(out, compareAnnotations(base, old.Annotations, new.Annotations)...)
	if o, n := compactText(old.Icons), compactText(new.Icons); o != n {
		// Icons are shown by clients when the tool is exposed directly;
		// they never change what a call does.
		out = append(out, with(base, Icons, Cosmetic, o, n, "icons changed"))
	}
	out = append(out, compareSchemas(base, old.InputSchema, new.InputSchema, false)...)
	out = append(out, compareSchemas(base, old.OutputSchema, new.OutputSchema, true)...)
	return out
}

// compareAnnotations reports hints as Compatible: they steer how a client
// treats a tool (confirmation prompts, retries) but never reject a call.
func compareAnnotations(base Change, old, new []byte) []Change {
	if string(old) == string(new) {
		return nil
	}
	o, okOld := decodeObject(old)
	n, okNew := decodeObject(new)
	if !okOld || !okNew {
		return []Change{with(base, Annotation, Compatible, string(old), string(new),
			"annotations changed (not a JSON object; not analysed)")}
	}
	var out []Change
	for _, key := range unionKeys(o, n) {
		ov, inOld := o[key]
		nv, inNew := n[key]
		ot, nt := canon(ov), canon(nv)
		if inOld && inNew && ot == nt {
			continue
		}
		sev := Compatible
		if key == "title" {
			sev = Cosmetic
		}
		var msg string
		switch {
		case !inOld:
			ot = ""
			msg = fmt.Sprintf("annotation %s set to %s", displayName(key), nt)
		case !inNew:
			nt = ""
			msg = fmt.Sprintf("annotation %s removed (was %s)", displayName(key), ot)
		default:
			msg = fmt.Sprintf("annotation %s changed from %s to %s", displayName(key), ot, nt)
		}
		out = append(out, with(base, Annotation, sev, ot, nt, msg))
	}
	return out
}

func compareResources(backend string, old, new []manifest.Resource) []Change {
	o := index(old, func(r manifest.Resource) string { return r.URI })
	n := index(new, func(r manifest.Resource) string { return r.URI })
	var out []Change
	for _, uri := range unionKeys(o, n) {
		base := Change{Backend: backend, Subject: SubjectResource, Name: uri}
		or, inOld := o[uri]
		nr, inNew := n[uri]
		out = append(out, compareListed(base, inOld, inNew,
			listed{or.Name, or.Title, or.Description, or.MIMEType}, listed{nr.Name, nr.Title, nr.Description, nr.MIMEType})...)
	}
	return out
}

func compareTemplates(backend string, old, new []manifest.ResourceTemplate) []Change {
	o := index(old, func(r manifest.ResourceTemplate) string { return r.URITemplate })
	n := index(new, func(r manifest.ResourceTemplate) string { return r.URITemplate })
	var out []Change
	for _, uri := range unionKeys(o, n) {
		base := Change{Backend: backend, Subject: SubjectTemplate, Name: uri}
		or, inOld := o[uri]
		nr, inNew := n[uri]
		out = append(out, compareListed(base, inOld, inNew,
			listed{or.Name, or.Title, or.Description, or.MIMEType}, listed{nr.Name, nr.Title, nr.Description, nr.MIMEType})...)
	}
	return out
}

// listed is what resources and resource templates have in common.
type listed struct{ name, title, description, mimeType string }

func compareListed(base Change, inOld, inNew bool, old, new listed) []Change {
	switch {
	case !inOld:
		return []Change{with(base, Added, Compatible, "", "", "added")}
	case !inNew:
		return []Change{with(base, Removed, Breaking, "", "", "removed; reads of it will fail")}
	}
	var out []Change
	if old.name != new.name {
		out = append(out, with(base, Title, Cosmetic, old.name, new.name,
			fmt.Sprintf("name changed from %q to %q", old.name, new.name)))
	}
	if old.title != new.title {
		out = append(out, with(base, Title, Cosmetic, old.title, new.title,
			fmt.Sprintf("title changed from %q to %q", old.title, new.title)))
	}
	if old.description != new.description {
		out = append(out, with(base, Description, Cosmetic, old.description, new.description,
			textChange("description", old.description, new.description)))
	}
	if old.mimeType != new.mimeType {
		out = append(out, with(base, MIMEType, Compatible, old.mimeType, new.mimeType,
			fmt.Sprintf("MIME type changed from %q to %q", old.mimeType, new.mimeType)))
	}
	return out
}

func comparePrompts(backend string, old, new []manifest.Prompt) []Change {
	o := index(old, func(p manifest.Prompt) string { return p.Name })
	n := index(new, func(p manifest.Prompt) string { return p.Name })
	var out []Change
	for _, name := range unionKeys(o, n) {
		base := Change{Backend: backend, Subject: SubjectPrompt, Name: name}
		op, inOld := o[name]
		np, inNew := n[name]
		switch {
		case !inOld:
			out = append(out, with(base, Added, Compatible, "", "", "added"))
			continue
		case !inNew:
			out = append(out, with(base, Removed, Breaking, "", "", "removed; requests for it will fail"))
			continue
		}
		if op.Title != np.Title {
			out = append(out, with(base, Title, Cosmetic, op.Title, np.Title,
				fmt.Sprintf("title changed from %q to %q", op.Title, np.Title)))
		}
		if op.Description != np.Description {
			out = append(out, with(base, Description, Cosmetic, op.Description, np.Description,
				textChange("description", op.Description, np.Description)))
		}
		out = append(out, compareArguments(base, op.Arguments, np.Arguments)...)
	}
	return out
}

func compareArguments(base Change, old, new []manifest.PromptArgument) []Change {
	o := index(old, func(a manifest.PromptArgument) string { return a.Name })
	n := index(new, func(a manifest.PromptArgument) string { return a.Name })
	var out []Change
	for _, name := range unionKeys(o, n) {
		c := base
		c.Path = name
		oa, inOld := o[name]
		na, inNew := n[name]
		arg := fmt.Sprintf("argument %q", name)
		switch {
		case !inOld && na.Required:
			out = append(out, with(c, ParamAdded, Breaking, "", "", arg+" added (required); existing requests do not send it"))
		case !inOld:
			out = append(out, with(c, ParamAdded, Compatible, "", "", arg+" added (optional)"))
		case !inNew:
			out = append(out, with(c, ParamRemoved, Breaking, "", "", arg+" removed; requests still sending it may be rejected"))
		default:
			if !oa.Required && na.Required {
				out = append(out, with(c, Required, Breaking, "optional", "required", arg+" became required"))
			}
			if oa.Required && !na.Required {
				out = append(out, with(c, Optional, Compatible, "required", "optional", arg+" became optional"))
			}
			if oa.Description != na.Description {
				out = append(out, with(c, Description, Cosmetic, oa.Description, na.Description,
					arg+": "+textChange("description", oa.Description, na.Description)))
			}
		}
	}
	return out
}
