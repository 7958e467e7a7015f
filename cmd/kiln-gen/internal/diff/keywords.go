package diff

import (
	"fmt"
	"slices"
	"strings"
)

// opaque keywords change validation in ways this package does not model;
// any difference in them is reported as Unanalysed. Sorted.
var opaque = []string{
	"$dynamicRef", "$recursiveRef", "$ref", "additionalItems", "allOf", "anyOf",
	"contains", "contentSchema", "dependencies", "dependentRequired", "dependentSchemas",
	"else", "if", "not", "oneOf", "patternProperties", "prefixItems", "propertyNames",
	"then", "unevaluatedItems", "unevaluatedProperties",
}

// shaped keywords are analysed only in their usual shape; a malformed value
// (a tuple "items", a "type" of numbers) is reported as Unanalysed instead.
var shaped = []string{"additionalProperties", "enum", "items", "properties", "required", "type"}

func wellShaped(key string, v any) bool {
	switch key {
	case "additionalProperties", "items":
		_, ok := asSchema(v)
		return ok
	case "enum", "required":
		_, ok := v.([]any)
		return ok
	case "properties":
		_, ok := v.(map[string]any)
		return ok
	case "type":
		_, ok := typeSet(map[string]any{"type": v})
		return ok
	}
	return true
}

// bounds maps each numeric bound to whether it is a lower bound, for which
// raising the value tightens the schema.
var bounds = map[string]bool{
	"exclusiveMaximum": false, "exclusiveMinimum": true,
	"maxContains": false, "maxItems": false, "maxLength": false, "maxProperties": false, "maximum": false,
	"minContains": true, "minItems": true, "minLength": true, "minProperties": true, "minimum": true,
}

// assertions restrict values when present; "const" stays here only when a
// schema has both const and enum (norm folds a lone const into enum).
var assertions = []string{"const", "format", "multipleOf", "pattern"}

// cosmeticKeys carry text for humans; compatibleKeys are annotations a
// client may act on but that never reject a value; ignoredKeys only matter
// through the $refs that norm expands where they are used.
var (
	cosmeticKeys   = []string{"$comment", "examples"}
	compatibleKeys = []string{"$anchor", "$dynamicAnchor", "$id", "$recursiveAnchor", "$schema", "$vocabulary",
		"contentEncoding", "contentMediaType", "deprecated", "readOnly", "writeOnly"}
	ignoredKeys = []string{"$defs", "definitions"}
)

func (w *walker) unanalysed(om, nm map[string]any, path string) {
	var keys []string
	for _, k := range opaque {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		if !inOld && !inNew {
			continue
		}
		// An unresolved local $ref spelled the same can still point at a
		// changed definition; only equal definitions make it safe to skip.
		// A remote one points outside the manifest, where no change is seen.
		if inOld != inNew || canon(ov) != canon(nv) || (k == "$ref" && !w.defsEqual && localRef(ov)) {
			keys = append(keys, k)
		}
	}
	for _, k := range shaped {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		bad := (inOld && !wellShaped(k, ov)) || (inNew && !wellShaped(k, nv))
		if bad && (inOld != inNew || canon(ov) != canon(nv)) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	pick := func(m map[string]any) string {
		sub := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				sub[k] = v
			}
		}
		return canon(sub)
	}
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	w.add(path, Unanalysed, Breaking, pick(om), pick(nm),
		fmt.Sprintf("%s: %s changed (not analysed, assume breaking)", w.where(path), strings.Join(quoted, ", ")))
}

func (w *walker) compareObject(om, nm map[string]any, path string, depth int, oStack, nStack []string) {
	oProps, okOld := propertiesOf(om)
	nProps, okNew := propertiesOf(nm)
	if okOld && okNew {
		w.compareProperties(om, nm, oProps, nProps, path, depth, oStack, nStack)
	}
	w.compareAdditional(om, nm, path, depth, oStack, nStack)
}

func propertiesOf(m map[string]any) (map[string]any, bool) {
	v, has := m["properties"]
	if !has {
		return nil, true
	}
	p, ok := v.(map[string]any)
	return p, ok
}

func stringSet(v any) map[string]bool {
	arr, _ := v.([]any)
	set := make(map[string]bool, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			set[s] = true
		}
	}
	return set
}

func (w *walker) compareProperties(om, nm, oProps, nProps map[string]any, path string, depth int, oStack, nStack []string) {
	oReq, nReq := stringSet(om["required"]), stringSet(nm["required"])
	names := unionKeys(unionKeys2(oProps, oReq), unionKeys2(nProps, nReq))
	closed := false
	if s, ok := additionalState(nm); ok && s == apClosed {
		closed = true
	}
	for _, name := range names {
		p := join(path, name)
		ov, inOldProps := oProps[name]
		nv, inNewProps := nProps[name]
		inOld, inNew := inOldProps || oReq[name], inNewProps || nReq[name]
		switch {
		case !inOld:
			switch {
			case w.output:
				w.add(p, ParamAdded, Compatible, "", canon(nv), w.where(p)+" added")
			case nReq[name]:
				w.add(p, ParamAdded, Breaking, "", canon(nv),
					fmt.Sprintf("%s added (required, %s); existing callers do not send it", w.where(p), w.summary(nv, nStack)))
			default:
				w.add(p, ParamAdded, Compatible, "", canon(nv),
					fmt.Sprintf("%s added (optional, %s)", w.where(p), w.summary(nv, nStack)))
			}
			continue
		case !inNew:
			msg := w.where(p) + " removed (breaking for readers)"
			if !w.output {
				msg = w.where(p) + " removed; callers still sending it may be rejected or find it ignored"
				if closed {
					msg = w.where(p) + " removed; callers still sending it will be rejected (additionalProperties is false)"
				}
			}
			w.add(p, ParamRemoved, Breaking, canon(ov), "", msg)
			continue
		}
		switch {
		case !oReq[name] && nReq[name]:
			msg := w.where(p) + " became required"
			if w.output {
				msg += " (always present now)"
			}
			w.add(p, Required, w.judge(Breaking, Compatible), "optional", "required", msg)
		case oReq[name] && !nReq[name]:
			msg := w.where(p) + " became optional"
			if w.output {
				msg += "; readers may find it missing (breaking for readers)"
			}
			w.add(p, Optional, w.judge(Compatible, Breaking), "required", "optional", msg)
		}
		if !inOldProps {
			ov = true
		}
		if !inNewProps {
			nv = true
		}
		w.walk(ov, nv, p, depth+1, oStack, nStack)
	}
}

func unionKeys2(props map[string]any, req map[string]bool) map[string]bool {
	out := make(map[string]bool, len(props)+len(req))
	for k := range props {
		out[k] = true
	}
	for k := range req {
		out[k] = true
	}
	return out
}

// summary describes a new property for "added (optional, string)".
func (w *walker) summary(v any, stack []string) string {
	m, _, _, ok := w.norm(v, w.newRoot, stack)
	if !ok {
		return "any"
	}
	ts, ok := typeSet(m)
	switch {
	case !ok:
		return "invalid type"
	case ts != nil:
		return typeText(ts)
	case m["enum"] != nil:
		return "enum"
	}
	return "any"
}

type apState int

const (
	apOpen apState = iota
	apClosed
	apSchema
)

func additionalState(m map[string]any) (apState, bool) {
	v, has := m["additionalProperties"]
	if !has {
		return apOpen, true
	}
	s, ok := asSchema(v)
	switch {
	case !ok:
		return apOpen, false
	case v == false:
		return apClosed, true
	case len(s) == 0:
		return apOpen, true
	}
	return apSchema, true
}

func (w *walker) compareAdditional(om, nm map[string]any, path string, depth int, oStack, nStack []string) {
	oState, okOld := additionalState(om)
	nState, okNew := additionalState(nm)
	if !okOld || !okNew {
		return
	}
	if oState == apSchema && nState == apSchema {
		w.walk(om["additionalProperties"], nm["additionalProperties"], joinStar(path), depth+1, oStack, nStack)
		return
	}
	if oState == nState {
		return
	}
	state := func(s apState, m map[string]any) string {
		switch s {
		case apOpen:
			return "allowed"
		case apClosed:
			return "forbidden"
		}
		return canon(m["additionalProperties"])
	}
	where := w.where(path)
	var msg string
	tighten := true
	switch {
	case nState == apClosed:
		msg = where + ": undeclared properties no longer allowed (additionalProperties is now false)"
	case nState == apSchema && oState == apOpen:
		msg = where + ": undeclared properties must now match a schema"
	case nState == apSchema:
		msg, tighten = where+": undeclared properties matching a schema now allowed", false
	default:
		msg, tighten = where+": undeclared properties now allowed", false
	}
	sev := Compatible
	if tighten {
		sev = w.judge(Breaking, Compatible)
	}
	w.add(path, Additional, sev, state(oState, om), state(nState, nm), msg)
}

func (w *walker) compareItems(om, nm map[string]any, path string, depth int, oStack, nStack []string) {
	ov, inOld := om["items"]
	nv, inNew := nm["items"]
	if !inOld && !inNew {
		return
	}
	if (inOld && !wellShaped("items", ov)) || (inNew && !wellShaped("items", nv)) {
		return
	}
	if !inOld {
		ov = true
	}
	if !inNew {
		nv = true
	}
	w.walk(ov, nv, path+"[]", depth+1, oStack, nStack)
}

func (w *walker) compareConstraints(om, nm map[string]any, path string) {
	where := w.where(path)
	tight := w.judge(Breaking, Compatible)
	for _, k := range sortedKeys(bounds) {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		if (!inOld && !inNew) || (inOld && inNew && canon(ov) == canon(nv)) {
			continue
		}
		ot, nt := canon(ov), canon(nv)
		of, okOld := number(ov)
		nf, okNew := number(nv)
		switch {
		case !inOld:
			w.add(path, Constraint, tight, "", nt, fmt.Sprintf("%s: %s %s added", where, k, short(nt)))
		case !inNew:
			w.add(path, Constraint, Compatible, ot, "", fmt.Sprintf("%s: %s %s removed", where, k, short(ot)))
		case okOld && okNew && of == nf:
		case okOld && okNew:
			verb, sev := "lowered", Compatible
			if nf > of {
				verb = "raised"
			}
			if (bounds[k] && nf > of) || (!bounds[k] && nf < of) {
				sev = tight
			}
			w.add(path, Constraint, sev, ot, nt, fmt.Sprintf("%s: %s %s from %s to %s", where, k, verb, short(ot), short(nt)))
		default:
			w.add(path, Constraint, tight, ot, nt, fmt.Sprintf("%s: %s changed from %s to %s", where, k, short(ot), short(nt)))
		}
	}
	for _, k := range assertions {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		if !inOld && !inNew {
			continue
		}
		ot, nt := canon(ov), canon(nv)
		switch {
		case inOld && inNew && ot == nt:
		case !inOld:
			w.add(path, Constraint, tight, "", nt, fmt.Sprintf("%s: %s %s added", where, k, short(nt)))
		case !inNew:
			w.add(path, Constraint, Compatible, ot, "", fmt.Sprintf("%s: %s %s removed", where, k, short(ot)))
		default:
			msg := fmt.Sprintf("%s: %s changed from %s to %s", where, k, short(ot), short(nt))
			if k == "pattern" && !w.output {
				msg += " (patterns are not compared; assume breaking)"
			}
			w.add(path, Constraint, tight, ot, nt, msg)
		}
	}
	ou, nu := om["uniqueItems"] == true, nm["uniqueItems"] == true
	switch {
	case !ou && nu:
		w.add(path, Constraint, tight, "false", "true", where+": items must now be unique")
	case ou && !nu:
		w.add(path, Constraint, Compatible, "true", "false", where+": items no longer need to be unique")
	}
}

// compareAnnotations covers the keywords that describe rather than
// restrict, plus any keyword the analysis does not know.
func (w *walker) compareAnnotations(om, nm map[string]any, path string) {
	where := w.where(path)
	for _, k := range unionKeys(om, nm) {
		ov, inOld := om[k]
		nv, inNew := nm[k]
		if inOld && inNew && canon(ov) == canon(nv) {
			continue
		}
		switch {
		case k == "description":
			ot, nt := text(ov), text(nv)
			w.add(path, Description, Cosmetic, ot, nt, where+": "+textChange("description", ot, nt))
		case k == "title":
			ot, nt := text(ov), text(nv)
			w.add(path, Title, Cosmetic, ot, nt, fmt.Sprintf("%s: title changed from %q to %q", where, short(ot), short(nt)))
		case k == "default":
			w.keyword(path, Default, Compatible, "default", "", ov, nv, inOld, inNew)
		case slices.Contains(cosmeticKeys, k):
			w.keyword(path, Keyword, Cosmetic, fmt.Sprintf("keyword %q", k), "", ov, nv, inOld, inNew)
		case slices.Contains(compatibleKeys, k):
			w.keyword(path, Keyword, Compatible, fmt.Sprintf("keyword %q", k), "", ov, nv, inOld, inNew)
		case analysedKey(k):
		default:
			w.keyword(path, Keyword, Compatible, fmt.Sprintf("keyword %q", k), " (not a JSON Schema keyword; validators ignore it)", ov, nv, inOld, inNew)
		}
	}
}

func localRef(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "#")
}

func analysedKey(k string) bool {
	_, bound := bounds[k]
	return bound || k == "uniqueItems" || slices.Contains(opaque, k) || slices.Contains(shaped, k) ||
		slices.Contains(assertions, k) || slices.Contains(ignoredKeys, k)
}

func (w *walker) keyword(path string, kind Kind, sev Severity, what, note string, ov, nv any, inOld, inNew bool) {
	ot, nt := canon(ov), canon(nv)
	where := w.where(path)
	switch {
	case !inOld:
		w.add(path, kind, sev, "", nt, fmt.Sprintf("%s: %s set to %s%s", where, what, short(nt), note))
	case !inNew:
		w.add(path, kind, sev, ot, "", fmt.Sprintf("%s: %s removed (was %s)%s", where, what, short(ot), note))
	default:
		w.add(path, kind, sev, ot, nt, fmt.Sprintf("%s: %s changed from %s to %s%s", where, what, short(ot), short(nt), note))
	}
}

// text returns strings verbatim and anything else as JSON; nil (absent)
// becomes the empty string.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	return canon(v)
}
