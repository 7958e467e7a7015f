package poison

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Finding is one rule tripped by one text.
type Finding struct {
	// Backend is the backend the text came from.
	Backend string
	// Subject is what the text belongs to: a tool's name, "prompts/NAME"
	// for a prompt, "instructions" for the server's instructions. With the
	// rule it forms the accept_findings key, RULE@SUBJECT.
	Subject string
	// Rule is the ID of the rule in Rules.
	Rule string
	// Field is where the text sits under the subject: "description",
	// "title", "name", "inputSchema.properties.note.description", ...
	Field string
	// Reason is the rule's reason, for a reviewer.
	Reason string
	// Excerpt is the part of the text that tripped the rule, quoted so
	// that invisible characters show.
	Excerpt string
}

// Key is the entry that accepts this finding in backends.NAME.accept_findings.
func (f Finding) Key() string { return f.Rule + "@" + f.Subject }

// Line is the finding as the reviewer's summary prints it.
func (f Finding) Line() string {
	return fmt.Sprintf("SUSPICIOUS %s.%s %s: %s [%s] %s", f.Backend, f.Subject, f.Field, f.Reason, f.Rule, f.Excerpt)
}

// Text is one model-facing text of a manifest.
type Text struct {
	Subject, Field, Value string
}

// ToolTexts returns every text of t a model reads: its name, title,
// description and every description and title in its input and output
// schemas, walked recursively.
func ToolTexts(t manifest.Tool) []Text {
	out := []Text{{t.Name, "name", t.Name}, {t.Name, "title", t.Title}, {t.Name, "description", t.Description}}
	for _, s := range []struct {
		field string
		raw   json.RawMessage
	}{{"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}} {
		var v any
		if len(s.raw) == 0 || json.Unmarshal(s.raw, &v) != nil {
			continue
		}
		walkSchema(v, s.field, 0, func(field, text string) { out = append(out, Text{t.Name, field, text}) })
	}
	return out
}

// Texts returns every model-facing text of m: its tools', its prompts' and
// its server instructions.
func Texts(m *manifest.Manifest) []Text {
	out := []Text{{"instructions", "text", m.Instructions}}
	for _, t := range m.Tools {
		out = append(out, ToolTexts(t)...)
	}
	for _, p := range m.Prompts {
		out = append(out, PromptTexts(p)...)
	}
	return out
}

// PromptTexts returns a prompt's title, description and its arguments'.
func PromptTexts(p manifest.Prompt) []Text {
	s := "prompts/" + p.Name
	out := []Text{{s, "title", p.Title}, {s, "description", p.Description}}
	for _, a := range p.Arguments {
		out = append(out, Text{s, "arguments." + a.Name + ".title", a.Title}, Text{s, "arguments." + a.Name + ".description", a.Description})
	}
	return out
}

// maxDepth bounds the schema walk: a schema nested deeper is a schema no
// model reads to the bottom, and the bound keeps a hostile one cheap.
const maxDepth = 32

// walkSchema calls fn with every description and title in a JSON schema,
// under properties, items, combinators and definitions.
func walkSchema(v any, path string, depth int, fn func(field, text string)) {
	if depth > maxDepth {
		return
	}
	switch n := v.(type) {
	case []any:
		for i, e := range n {
			walkSchema(e, fmt.Sprintf("%s.%d", path, i), depth+1, fn)
		}
	case map[string]any:
		for _, k := range []string{"title", "description"} {
			if s, ok := n[k].(string); ok {
				fn(path+"."+k, s)
			}
		}
		for _, k := range []string{"properties", "patternProperties", "$defs", "definitions"} {
			if m, ok := n[k].(map[string]any); ok {
				for _, name := range sortedKeys(m) {
					walkSchema(m[name], path+"."+k+"."+name, depth+1, fn)
				}
			}
		}
		for _, k := range []string{"items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "prefixItems"} {
			if e, ok := n[k]; ok {
				walkSchema(e, path+"."+k, depth+1, fn)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// CheckText runs every single-text rule over one text.
func CheckText(backend string, t Text) []Finding {
	if t.Value == "" {
		return nil
	}
	var out []Finding
	for _, r := range Rules {
		if r.Match == nil {
			continue
		}
		if ex := r.Match(t.Value); ex != "" {
			out = append(out, Finding{Backend: backend, Subject: t.Subject, Rule: r.ID, Field: t.Field, Reason: r.Reason, Excerpt: excerpt(ex)})
		}
	}
	return out
}

// CheckTool checks one tool's texts (no cross-tool rules).
func CheckTool(backend string, t manifest.Tool) []Finding {
	var out []Finding
	for _, x := range ToolTexts(t) {
		out = append(out, CheckText(backend, x)...)
	}
	return out
}

// CheckManifest checks m's texts and, when prev (the recorded manifest of
// the same backend) is given, their growth since then.
func CheckManifest(m, prev *manifest.Manifest) []Finding {
	var out []Finding
	texts := Texts(m)
	for _, x := range texts {
		out = append(out, CheckText(m.Backend, x)...)
	}
	if prev != nil {
		old := map[[2]string]string{}
		for _, x := range Texts(prev) {
			old[[2]string{x.Subject, x.Field}] = x.Value
		}
		for _, x := range texts {
			if was, ok := old[[2]string{x.Subject, x.Field}]; ok && x.Field != "name" {
				if f, grew := Growth(m.Backend, x, was); grew {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// Growth reports whether t grew sharply from was (see GrowthMinChars).
func Growth(backend string, t Text, was string) (Finding, bool) {
	n, o := utf8.RuneCountInString(t.Value), utf8.RuneCountInString(was)
	if n-o < GrowthMinChars || float64(n) < GrowthRatio*float64(o) {
		return Finding{}, false
	}
	return Finding{Backend: backend, Subject: t.Subject, Rule: RuleGrowth, Field: t.Field, Reason: reason(RuleGrowth),
		Excerpt: fmt.Sprintf("%d → %d characters, new: %s", o, n, excerpt(t.Value[min(len(was), len(t.Value)):]))}, true
}

// Check checks every manifest, the growth of each against the previous
// manifest of the same backend in prev (nil for none), and tool names
// across all of them for homoglyph collisions. Findings come sorted.
func Check(ms, prev []*manifest.Manifest) []Finding {
	old := map[string]*manifest.Manifest{}
	for _, m := range prev {
		old[m.Backend] = m
	}
	var out []Finding
	names := NewNames()
	for _, m := range ms {
		out = append(out, CheckManifest(m, old[m.Backend])...)
		for _, t := range m.Tools {
			names.Add(m.Backend, t.Name)
		}
	}
	for _, m := range ms {
		for _, t := range m.Tools {
			if f, ok := names.Lookalike(m.Backend, t.Name); ok {
				out = append(out, f)
			}
		}
	}
	Sort(out)
	return out
}

// Sort orders findings by backend, subject, field and rule.
func Sort(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		return strings.Compare(a.Backend+"\x00"+a.Subject+"\x00"+a.Field+"\x00"+a.Rule, b.Backend+"\x00"+b.Subject+"\x00"+b.Field+"\x00"+b.Rule)
	})
}

// Accept splits findings into those the accept lists (backend → RULE@SUBJECT
// entries, from backends.NAME.accept_findings) do not cover and those they
// do, and returns the entries that matched nothing ("backend: entry"),
// so a stale accept is reported instead of silently waiving a future
// finding.
func Accept(fs []Finding, accept map[string][]string) (kept, accepted []Finding, unused []string) {
	used := map[string]bool{}
	for _, f := range fs {
		if slices.Contains(accept[f.Backend], f.Key()) {
			used[f.Backend+": "+f.Key()] = true
			accepted = append(accepted, f)
			continue
		}
		kept = append(kept, f)
	}
	for _, b := range sortedKeys(accept) {
		for _, k := range accept[b] {
			if !used[b+": "+k] {
				unused = append(unused, b+": "+k)
			}
		}
	}
	return kept, accepted, unused
}

func reason(id string) string {
	for _, r := range Rules {
		if r.ID == id {
			return r.Reason
		}
	}
	return id
}

// excerptLen is how many characters of a match a reviewer is shown.
const excerptLen = 100

func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > excerptLen {
		r := []rune(s)
		s = string(r[:excerptLen]) + "…"
	}
	return fmt.Sprintf("%+q", s)
}
