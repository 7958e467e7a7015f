package diff

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

const (
	// walkBudget caps the schema nodes compared per tool schema. Local $refs
	// are expanded where they are used, so a schema whose definitions refer
	// to each other several times can describe exponentially many paths; a
	// cap keeps `kiln-gen diff` fast on such input and the rest is reported
	// as not analysed rather than dropped.
	walkBudget = 1 << 14
	// maxDepth bounds nesting (and $ref chains) for the same reason.
	maxDepth = 64
)

// compareSchemas diffs one tool schema, input or output.
func compareSchemas(base Change, old, new []byte, output bool) []Change {
	base.Output = output
	if output {
		switch {
		case len(old) == 0 && len(new) == 0:
			return nil
		case len(old) == 0:
			return []Change{with(base, OutputAdded, Compatible, "", compactText(new), "output schema added")}
		case len(new) == 0:
			return []Change{with(base, OutputRemoved, Breaking, compactText(old), "",
				"output schema removed; structured results lose their declared shape (breaking for readers)")}
		}
	}
	if string(old) == string(new) {
		return nil
	}
	w := &walker{base: base, output: output, budget: walkBudget}
	ov, okOld := decodeJSON(old)
	nv, okNew := decodeJSON(new)
	if !okOld || !okNew {
		w.add("", Unanalysed, Breaking, string(old), string(new),
			w.where("")+" changed (not valid JSON; not analysed, assume breaking)")
		return w.out
	}
	w.oldRoot, w.newRoot = ov, nv
	w.defsEqual = canon(defs(ov)) == canon(defs(nv))
	w.walk(ov, nv, "", 0, nil, nil)
	if w.exhausted {
		w.add("", Unanalysed, Breaking, "", "",
			w.where("")+" too large or too self-referential to analyse fully; differences past the first "+
				fmt.Sprint(walkBudget)+" nodes are not analysed, assume breaking")
	}
	return w.out
}

// walker compares one pair of schema documents.
type walker struct {
	base             Change
	output           bool
	oldRoot, newRoot any
	// defsEqual means every local $ref resolves to the same text on both
	// sides, so equal text below means equal meaning.
	defsEqual bool
	budget    int
	exhausted bool
	out       []Change
}

func defs(root any) []any {
	m, _ := root.(map[string]any)
	return []any{m["$defs"], m["definitions"]}
}

func (w *walker) add(path string, k Kind, sev Severity, old, new, msg string) {
	c := w.base
	c.Path = path
	w.out = append(w.out, with(c, k, sev, old, new, msg))
}

func (w *walker) where(path string) string {
	switch {
	case w.output && path == "":
		return "output schema"
	case w.output:
		return "output field " + quotePath(path)
	case path == "":
		return "input schema"
	}
	return "parameter " + quotePath(path)
}

// quotePath quotes a path unless join already quoted a segment of it, which
// a second round of quoting would bury under backslashes.
func quotePath(path string) string {
	if strings.Contains(path, `"`) {
		return path
	}
	return strconv.Quote(path)
}

// judge picks the severity by direction: a schema that tightens breaks
// callers sending input and is harmless to readers of output.
func (w *walker) judge(input, output Severity) Severity {
	if w.output {
		return output
	}
	return input
}

// walk compares two schema nodes found at the same path. oStack and nStack
// hold the $refs being expanded above this node, per side, to cut cycles.
func (w *walker) walk(o, n any, path string, depth int, oStack, nStack []string) {
	if w.budget <= 0 {
		w.exhausted = true
		return
	}
	w.budget--
	oc, nc := canon(o), canon(n)
	if oc == nc && (w.defsEqual || !strings.Contains(oc, `"$ref"`)) {
		return
	}
	if depth > maxDepth {
		w.add(path, Unanalysed, Breaking, oc, nc, w.where(path)+" changed below nesting depth "+fmt.Sprint(maxDepth)+" (not analysed, assume breaking)")
		return
	}
	om, oStack, oCut, okOld := w.norm(o, w.oldRoot, oStack)
	nm, nStack, nCut, okNew := w.norm(n, w.newRoot, nStack)
	if !okOld || !okNew {
		w.add(path, Unanalysed, Breaking, oc, nc, w.where(path)+" changed (not a JSON Schema object; not analysed, assume breaking)")
		return
	}
	if oCut && nCut && canon(om["$ref"]) == canon(nm["$ref"]) {
		// Both sides recurse into the definition being compared further up;
		// only keywords written next to the $ref are left to compare.
		w.compareAnnotations(om, nm, path)
		return
	}
	w.unanalysed(om, nm, path)
	overlap := w.compareType(om, nm, path)
	w.compareEnum(om, nm, path)
	if overlap {
		w.compareObject(om, nm, path, depth, oStack, nStack)
		w.compareItems(om, nm, path, depth, oStack, nStack)
		w.compareConstraints(om, nm, path)
	}
	w.compareAnnotations(om, nm, path)
}

// norm turns a schema node into an object with local $refs expanded and the
// common nullable spellings folded into "type". cut reports a $ref left in
// place because it is already being expanded above; ok is false for nodes
// that are neither objects nor booleans.
func (w *walker) norm(v any, root any, stack []string) (m map[string]any, _ []string, cut, ok bool) {
	m, ok = asSchema(v)
	if !ok {
		return nil, stack, false, false
	}
	for hops := 0; ; hops++ {
		ref, isRef := m["$ref"].(string)
		if !isRef || !strings.HasPrefix(ref, "#") {
			break
		}
		if slices.Contains(stack, ref) || hops >= maxDepth {
			cut = true
			break
		}
		target, found := resolvePointer(root, ref[1:])
		if !found {
			break
		}
		tm, isSchema := asSchema(target)
		if !isSchema {
			break
		}
		// Keywords next to a $ref apply too (2019-09 and later); letting them
		// override the target keeps a local description or default visible.
		merged := maps.Clone(tm)
		for k, v := range m {
			if k != "$ref" {
				merged[k] = v
			}
		}
		m = merged
		stack = append(slices.Clip(stack), ref)
	}
	if !cut {
		m, stack = w.foldNullable(m, root, stack)
	}
	if c, has := m["const"]; has {
		if _, hasEnum := m["enum"]; !hasEnum {
			m = maps.Clone(m)
			delete(m, "const")
			m["enum"] = []any{c}
		}
	}
	return m, stack, cut, true
}

// foldNullable rewrites anyOf/oneOf unions that only spell a type union,
// such as pydantic's Optional[X] ({"anyOf": [X, {"type": "null"}]}), into a
// plain "type", so that the common case is analysed instead of reported as
// an opaque union change.
func (w *walker) foldNullable(m map[string]any, root any, stack []string) (map[string]any, []string) {
	if _, typed := m["type"]; typed {
		return m, stack
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, ok := m[key].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		var types []string
		var other []any
		nulls := 0
		for _, b := range branches {
			ts, pure := pureType(b)
			switch {
			case pure && len(ts) == 1 && ts[0] == "null":
				nulls++
				types = append(types, ts...)
			case pure:
				types = append(types, ts...)
			default:
				other = append(other, b)
			}
		}
		switch {
		case len(other) == 0:
			out := maps.Clone(m)
			delete(out, key)
			out["type"] = toAny(types)
			return out, stack
		case len(other) == 1 && nulls > 0 && nulls+1 == len(branches):
			bm, bStack, cut, ok := w.norm(other[0], root, stack)
			if !ok || cut {
				return m, stack
			}
			out := maps.Clone(bm)
			for k, v := range m {
				if k != key {
					out[k] = v
				}
			}
			if ts, ok := typeSet(out); ok && ts != nil && !slices.Contains(ts, "null") {
				out["type"] = toAny(append(ts, "null"))
			}
			return out, bStack
		}
	}
	return m, stack
}

// pureType reports the type names of a branch whose only keyword is "type".
func pureType(b any) ([]string, bool) {
	m, ok := b.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	if _, has := m["type"]; !has {
		return nil, false
	}
	ts, ok := typeSet(m)
	return ts, ok && ts != nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// typeSet returns the sorted type names of a schema; nil with ok means no
// "type" keyword, which accepts any type.
func typeSet(m map[string]any) ([]string, bool) {
	v, has := m["type"]
	if !has {
		return nil, true
	}
	var out []string
	switch t := v.(type) {
	case string:
		out = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

// accepts reports whether a value of type t passes a schema with type set
// ts; "integer" values pass "number".
func accepts(ts []string, t string) bool {
	return ts == nil || slices.Contains(ts, t) || (t == "integer" && slices.Contains(ts, "number"))
}

// subset reports whether every value of a type in a passes b.
func subset(a, b []string) bool {
	if b == nil {
		return true
	}
	if a == nil {
		return false
	}
	for _, t := range a {
		if !accepts(b, t) {
			return false
		}
	}
	return true
}

// typeText lists null last, as people write it ("string|null").
func typeText(ts []string) string {
	if ts == nil {
		return "any"
	}
	if i := slices.Index(ts, "null"); i >= 0 && len(ts) > 1 {
		ts = append(slices.Delete(slices.Clone(ts), i, i+1), "null")
	}
	return strings.Join(ts, "|")
}

// compareType reports type changes and whether the two type sets still
// overlap; when they do not, nested differences would only be noise.
func (w *walker) compareType(om, nm map[string]any, path string) bool {
	ot, okOld := typeSet(om)
	nt, okNew := typeSet(nm)
	if !okOld || !okNew {
		return true // malformed "type": reported by unanalysed
	}
	wider, narrower := subset(ot, nt), subset(nt, ot)
	if wider && narrower {
		return true
	}
	msg := fmt.Sprintf("%s: type changed from %s to %s", w.where(path), typeText(ot), typeText(nt))
	var sev Severity
	switch {
	case wider:
		// A reader decoding into a generated Go stub fails on a widened
		// type (an int64 field receiving 1.5), so readers break here.
		sev = w.judge(Compatible, Breaking)
		msg += " (widened" + w.readers(sev) + ")"
	case narrower:
		sev = w.judge(Breaking, Compatible)
		msg += " (narrowed)"
	default:
		sev = Breaking
		msg += w.readers(sev)
	}
	w.add(path, Type, sev, typeText(ot), typeText(nt), msg)
	for _, t := range ot {
		if accepts(nt, t) {
			return true
		}
	}
	for _, t := range nt {
		if accepts(ot, t) {
			return true
		}
	}
	return ot == nil || nt == nil
}

// readers marks output-side breaks so they are not read as input breaks.
func (w *walker) readers(sev Severity) string {
	if w.output && sev == Breaking {
		return "; breaking for readers"
	}
	return ""
}

func (w *walker) compareEnum(om, nm map[string]any, path string) {
	ov, inOld := om["enum"]
	nv, inNew := nm["enum"]
	if !inOld && !inNew {
		return
	}
	oe, okOld := enumValues(ov, inOld)
	ne, okNew := enumValues(nv, inNew)
	if !okOld || !okNew {
		return // malformed: reported by unanalysed
	}
	where := w.where(path)
	switch {
	case !inOld:
		w.add(path, Constraint, w.judge(Breaking, Compatible), "", canon(nv),
			fmt.Sprintf("%s: now limited to values %s", where, valueList(ne)))
		return
	case !inNew:
		w.add(path, Constraint, Compatible, canon(ov), "",
			fmt.Sprintf("%s: no longer limited to fixed values", where))
		return
	}
	removed := minus(oe, ne)
	added := minus(ne, oe)
	if len(removed) > 0 {
		w.add(path, EnumRemoved, w.judge(Breaking, Compatible), canon(ov), canon(nv),
			fmt.Sprintf("%s: enum values removed: %s", where, valueList(removed)))
	}
	if len(added) > 0 {
		msg := fmt.Sprintf("%s: enum values added: %s", where, valueList(added))
		if w.output {
			msg += " (readers may see new values)"
		}
		w.add(path, EnumAdded, Compatible, canon(ov), canon(nv), msg)
	}
}

// enumValues returns the canonical text of each allowed value.
func enumValues(v any, present bool) ([]string, bool) {
	if !present {
		return nil, true
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		out[i] = canon(e)
	}
	return out, true
}

// minus keeps the order of a so that messages list values as declared.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func valueList(vals []string) string {
	const show = 10
	if len(vals) <= show {
		return strings.Join(clip(vals), ", ")
	}
	return strings.Join(clip(vals[:show]), ", ") + fmt.Sprintf(" and %d more", len(vals)-show)
}

func clip(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = short(v)
	}
	return out
}
